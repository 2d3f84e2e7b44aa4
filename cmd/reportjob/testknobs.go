package main

import (
	"strconv"
	"time"
)

// Test-only tuning of the AWS clients, read from the environment that run()
// is given, never from the config file. The fault tests
// (cmd/reportjob/fault_*_test.go) set them so that a retried or timed-out
// request costs milliseconds instead of the minutes production allows; a
// deployment leaves them unset and gets the defaults.
//
//	RJTEST_AWS_REQUEST_TIMEOUT      bounds one HTTP request to S3 or DynamoDB (default: S3 5m, DynamoDB 1m)
//	RJTEST_AWS_MAX_BACKOFF          the SDK retryer's longest wait between attempts (default 20s)
//	RJTEST_DYNAMODB_BATCH_DEADLINE  how long one DynamoDB batch call is retried (default 2m)
//	RJTEST_S3_PART_SIZE             S3 multipart threshold and part size in bytes (default 8 MiB, at least 5 MiB)
const (
	envTestRequestTimeout = "RJTEST_AWS_REQUEST_TIMEOUT"
	envTestMaxBackoff     = "RJTEST_AWS_MAX_BACKOFF"
	envTestBatchDeadline  = "RJTEST_DYNAMODB_BATCH_DEADLINE"
	envTestPartSize       = "RJTEST_S3_PART_SIZE"
)

// testKnobs are the RJTEST_ tuning values; zero means the default.
type testKnobs struct {
	requestTimeout, maxBackoff, batchDeadline time.Duration
	partSize                                  int64 // s3sink.New checks it
}

// loadTestKnobs reads the tuning values from env.
func loadTestKnobs(env []string) (testKnobs, error) {
	var k testKnobs
	for _, f := range []struct {
		name string
		d    *time.Duration
	}{
		{envTestRequestTimeout, &k.requestTimeout},
		{envTestMaxBackoff, &k.maxBackoff},
		{envTestBatchDeadline, &k.batchDeadline},
	} {
		v := getenv(env, f.name)
		if v == "" {
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return testKnobs{}, usagef("%s=%q: want a positive Go duration such as 500ms", f.name, v)
		}
		*f.d = d
	}
	if v := getenv(env, envTestPartSize); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return testKnobs{}, usagef("%s=%q: want a positive number of bytes", envTestPartSize, v)
		}
		k.partSize = n
	}
	return k, nil
}
