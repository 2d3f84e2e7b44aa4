// Package testenv finds the real servers and tools that scripts/test.sh
// starts for integration tests. Without them a test is skipped, except
// under scripts/test.sh (which sets RJTEST_REQUIRE_SERVERS) or CI (CI set),
// where a missing server fails the test: a skipped integration test is a
// failure, not a pass.
package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Environment variables exported by scripts/test.sh. They use the RJTEST_
// prefix, not REPORTJOB_, which belongs to configuration overrides.
const (
	// EnvDynamoDB is DynamoDB Local's endpoint, e.g. http://127.0.0.1:8000.
	EnvDynamoDB = "RJTEST_DYNAMODB_ENDPOINT"
	// EnvDynalite is dynalite's endpoint: a second DynamoDB implementation,
	// one without Time to Live (UpdateTimeToLive is an unknown operation).
	EnvDynalite = "RJTEST_DYNALITE_ENDPOINT"
	// EnvS3 is versitygw's plain HTTP endpoint.
	EnvS3 = "RJTEST_S3_ENDPOINT"
	// EnvS3TLS is versitygw's HTTPS endpoint (self-signed certificate).
	EnvS3TLS = "RJTEST_S3_TLS_ENDPOINT"
	// EnvS3CA is the PEM file of the HTTPS endpoint's certificate.
	EnvS3CA = "RJTEST_S3_CA"
	// EnvS3AccessKey and EnvS3SecretKey are versitygw's root credentials.
	EnvS3AccessKey = "RJTEST_S3_ACCESS_KEY"
	EnvS3SecretKey = "RJTEST_S3_SECRET_KEY"
	// EnvDuckDB is a node_modules folder holding @duckdb/node-api.
	EnvDuckDB = "RJTEST_DUCKDB_NODE_MODULES"
	// EnvISO4217 is data.js of npm currency-codes: ISO 4217 list one, an
	// independent copy of the currencies' minor units.
	EnvISO4217 = "RJTEST_ISO4217_DATA"
	// EnvRequire, set by scripts/test.sh, makes a missing server a failure.
	EnvRequire = "RJTEST_REQUIRE_SERVERS"
)

// Require returns the value of the environment variable name, or skips
// the test when it is unset; under scripts/test.sh or CI it fails it.
func Require(t testing.TB, name, what string) string {
	t.Helper()
	v := os.Getenv(name)
	if v != "" {
		return v
	}
	if os.Getenv(EnvRequire) != "" || os.Getenv("CI") != "" {
		t.Fatalf("%s is not set: %s is required here (scripts/test.sh starts it)", name, what)
	}
	t.Skipf("%s is not set: no %s (scripts/test.sh starts it)", name, what)
	return ""
}

// S3 describes a running S3 server.
type S3 struct {
	Endpoint  string
	CAFile    string // "" for plain HTTP
	AccessKey string
	SecretKey string
}

// RequireS3 returns the plain HTTP S3 server, or skips (fails under CI).
func RequireS3(t testing.TB) S3 {
	t.Helper()
	return S3{
		Endpoint:  Require(t, EnvS3, "S3 server (versitygw)"),
		AccessKey: Require(t, EnvS3AccessKey, "S3 access key"),
		SecretKey: Require(t, EnvS3SecretKey, "S3 secret key"),
	}
}

// RequireS3TLS returns the HTTPS S3 server, or skips (fails under CI).
func RequireS3TLS(t testing.TB) S3 {
	t.Helper()
	s := RequireS3(t)
	s.Endpoint = Require(t, EnvS3TLS, "S3 server over HTTPS (versitygw)")
	s.CAFile = Require(t, EnvS3CA, "S3 server certificate")
	return s
}

// EnvRequireTools, like EnvRequire, makes a missing tool a failure.
const EnvRequireTools = "RJTEST_REQUIRE_TOOLS"

// RequireTool returns the path of the command-line tool name (e.g.
// "pdftotext"), found on PATH or in the project's .tools/bin (where
// scripts/tools.sh puts what the machine lacks), or skips the test when it
// is missing; under scripts/test.sh, RJTEST_REQUIRE_TOOLS or CI it fails it.
func RequireTool(t testing.TB, name, what string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if dir, err := os.Getwd(); err == nil {
		for ; ; dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				p := filepath.Join(dir, ".tools", "bin", name)
				if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
					return p
				}
				break
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	if os.Getenv(EnvRequire) != "" || os.Getenv(EnvRequireTools) != "" || os.Getenv("CI") != "" {
		t.Fatalf("%s is not on PATH nor in .tools/bin: %s is required here (scripts/tools.sh installs it)", name, what)
	}
	t.Skipf("%s is not on PATH nor in .tools/bin: no %s (scripts/tools.sh installs it)", name, what)
	return ""
}
