package s3sink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/reportjob/reportjob/internal/awsclient"
	"github.com/reportjob/reportjob/internal/fence"
)

// ClientConfig says how to reach S3. The zero value is the SDK's default
// chain for everything (region, endpoint incl. AWS_ENDPOINT_URL_S3,
// credentials, AWS_CA_BUNDLE).
type ClientConfig struct {
	// Region, e.g. "us-east-1"; "" = the SDK's default chain (AWS_REGION, profile).
	Region string
	// Endpoint, e.g. "https://s3.example.internal:9000"; "" = the SDK's
	// default (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, then AWS).
	Endpoint string
	// PathStyle addresses buckets as endpoint/bucket (S3-compatible servers).
	PathStyle bool
	// CABundle is a PEM file of extra trusted CAs; "" = AWS_CA_BUNDLE or the
	// system pool.
	CABundle string
	// AccessKeyID and SecretAccessKey are static credentials, for tests
	// only; when empty the SDK's default credential chain is used.
	AccessKeyID, SecretAccessKey string
	// RequestTimeout bounds one HTTP request: 0 = 5 minutes. Fault tests
	// shorten it.
	RequestTimeout time.Duration
	// MaxBackoff is the SDK retryer's longest wait between attempts: 0 =
	// the SDK's (20 s). Fault tests shorten it.
	MaxBackoff time.Duration
	// Logger, when set, gets each retry (package awsclient).
	Logger *slog.Logger
}

// requestTimeout bounds one HTTP request to S3.
const requestTimeout = 5 * time.Minute

// NewClient returns an S3 client for c.
func NewClient(ctx context.Context, c ClientConfig) (*s3.Client, error) {
	// A request that hangs would keep a run alive, and renewing its lease,
	// forever: bound each one (a part is at most a few MiB).
	timeout := requestTimeout
	if c.RequestTimeout > 0 {
		timeout = c.RequestTimeout
	}
	opts := []func(*config.LoadOptions) error{
		// Its connections check the lease fence right before each write
		// to the socket (fence.Transport).
		config.WithHTTPClient(awshttp.NewBuildableClient().WithTimeout(timeout).WithTransportOptions(fence.Transport)),
	}
	if c.MaxBackoff > 0 {
		opts = append(opts, config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxBackoff = c.MaxBackoff })
		}))
	}
	if c.Region != "" {
		opts = append(opts, config.WithRegion(c.Region))
	}
	if c.CABundle != "" {
		pem, err := os.ReadFile(c.CABundle)
		if err != nil {
			return nil, fmt.Errorf("s3 client: CA bundle: %w", err)
		}
		opts = append(opts, config.WithCustomCABundle(bytes.NewReader(pem)))
	}
	if c.AccessKeyID != "" || c.SecretAccessKey != "" {
		if c.AccessKeyID == "" || c.SecretAccessKey == "" {
			return nil, errors.New("s3 client: static credentials need both an access key id and a secret key")
		}
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, "")))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("s3 client: load AWS config: %w", err)
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		// Writes are refused before they are sent when the context's lease
		// fence fails (package fence).
		o.HTTPClient = fence.Client{Inner: o.HTTPClient, IsWrite: fence.S3Write}
		if c.Endpoint != "" {
			o.BaseEndpoint = aws.String(c.Endpoint)
		}
		o.UsePathStyle = c.PathStyle
		endpoint := "https://s3." + o.Region + ".amazonaws.com"
		if o.BaseEndpoint != nil {
			endpoint = *o.BaseEndpoint
		}
		o.Retryer = awsclient.LogRetries(o.Retryer, c.Logger, "S3", endpoint)
		o.Credentials = awsclient.HintCredentials(o.Credentials, c.Logger)
	}), nil
}

// EnsureBucket makes sure bucket exists and is ours: it creates it in
// region when missing (idempotent: BucketAlreadyOwnedByYou is success) and
// waits until it answers HeadBucket.
func EnsureBucket(ctx context.Context, client *s3.Client, bucket, region string) error {
	_, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)})
	if err == nil {
		return nil
	}
	if !bucketMissing(err) {
		return fmt.Errorf("check bucket s3://%s: %w", bucket, err)
	}
	in := &s3.CreateBucketInput{Bucket: aws.String(bucket)}
	if region != "" && region != "us-east-1" {
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{
			LocationConstraint: types.BucketLocationConstraint(region),
		}
	}
	if _, err := client.CreateBucket(ctx, in); err != nil {
		var owned *types.BucketAlreadyOwnedByYou
		var taken *types.BucketAlreadyExists
		switch {
		case errors.As(err, &owned):
		case errors.As(err, &taken):
			return fmt.Errorf("create bucket s3://%s: the name belongs to another account: %w", bucket, err)
		default:
			return fmt.Errorf("create bucket s3://%s: %w", bucket, err)
		}
	}
	w := s3.NewBucketExistsWaiter(client, func(o *s3.BucketExistsWaiterOptions) {
		o.MinDelay = 100 * time.Millisecond
		o.MaxDelay = 2 * time.Second
	})
	if err := w.Wait(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}, 2*time.Minute); err != nil {
		return fmt.Errorf("wait for bucket s3://%s: %w", bucket, err)
	}
	return nil
}

// bucketMissing reports whether err says the bucket does not exist.
func bucketMissing(err error) bool {
	var nsb *types.NoSuchBucket
	var nf *types.NotFound
	if errors.As(err, &nsb) || errors.As(err, &nf) || errorCode(err) == "NoSuchBucket" {
		return true
	}
	return httpStatus(err) == http.StatusNotFound
}

// objectMissing reports whether err says the object (not the bucket) does
// not exist.
func objectMissing(err error) bool {
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	if errors.As(err, &nsk) || errors.As(err, &nf) {
		return true
	}
	switch errorCode(err) {
	case "NoSuchKey", "NotFound":
		return true
	}
	return false
}

// httpStatus returns the HTTP status of the response err came with, or 0.
func httpStatus(err error) int {
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// errorCode returns the S3 error code of err ("NoSuchKey"), or "".
func errorCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

// GetObjectBytes reads the whole object key of bucket with client: for the
// small files the job reads outside its sink, such as the agency directory
// (statements.directory). An object of more than max bytes is an error.
func GetObjectBytes(ctx context.Context, client *s3.Client, bucket, key string, max int64) ([]byte, error) {
	out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	if n := aws.ToInt64(out.ContentLength); n > max {
		return nil, fmt.Errorf("%d bytes, more than the %d allowed", n, max)
	}
	b, err := io.ReadAll(io.LimitReader(out.Body, max+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("read s3://%s/%s: %w", bucket, key, err)
	case int64(len(b)) > max:
		return nil, fmt.Errorf("more than the %d bytes allowed", max)
	}
	return b, nil
}
