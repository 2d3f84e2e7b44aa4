// Package s3sink is a sink driver (driver.Bucket) on an S3 bucket and
// prefix: the key "a/b.csv" is the S3 object PREFIX/a/b.csv. Callers use it
// through the portable sink.Bucket: sink.New(s), s from New(client, opts).
//
// A Put of at most Options.PartSize bytes is one PutObject; a larger one a
// multipart upload through the SDK's upload manager, which is aborted (with
// a fresh context, so that a cancellation does not leave parts behind) on
// any failure: no truncated object is ever visible. Every request carries a
// SHA-256 checksum the server verifies, and every PutObject and
// CreateMultipartUpload the server-side encryption headers.
//
// Conditional Puts are one PutObject with If-None-Match: * or If-Match:
// ETAG. S3 answers 412 Precondition Failed when the condition does not
// hold (ErrPrecondition), and 409 ConditionalRequestConflict when another
// conditional write to the key is in flight: the Put tries again a few
// times, then reports ErrPrecondition. When the SDK retried the request
// (a 5xx or a reset connection: the first attempt may have been applied
// and its answer lost) and the retry finds the condition failed, the Put
// reads the object back: if it holds exactly the Put's bytes, the write
// was the Put's own and it succeeds.
package s3sink

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/reportjob/reportjob/internal/fence"
	"github.com/reportjob/reportjob/internal/sink"
	"github.com/reportjob/reportjob/internal/sink/driver"
)

const (
	// DefaultPartSize is the default multipart threshold and part size.
	DefaultPartSize = 8 << 20
	// MinPartSize is S3's smallest part (but the last).
	MinPartSize = 5 << 20 // manager.MinUploadPartSize
	// DefaultConcurrency is the default number of part uploads in flight.
	DefaultConcurrency = 4
	// abortTimeout bounds the clean-up of a failed multipart upload.
	abortTimeout = 30 * time.Second
	// maxKeyLen is S3's longest object key, in bytes.
	maxKeyLen = 1024
	// conflictAttempts bounds the attempts of a conditional Put answered
	// 409 ConditionalRequestConflict; conflictBackoff is the wait before
	// the second, doubled for each next one.
	conflictAttempts = 4
	conflictBackoff  = 50 * time.Millisecond
)

// Server-side encryption modes for Options.SSE.
const (
	SSENone   = ""
	SSEAES256 = "AES256"
	SSEKMS    = "aws:kms"
)

// Options configure a Sink.
type Options struct {
	// Bucket holds the objects.
	Bucket string
	// Prefix is "" or a key-like path such as "a/b" (no leading or trailing
	// slash); object keys are Prefix + "/" + key.
	Prefix string
	// SSE is "", "AES256" or "aws:kms".
	SSE string
	// KMSKeyID is the KMS key for SSE "aws:kms"; "" = the bucket's default.
	KMSKeyID string
	// PartSize is the multipart threshold and part size: 0 = 8 MiB, at
	// least 5 MiB.
	PartSize int64
	// Concurrency is the number of part uploads in flight per object: 0 = 4.
	Concurrency int
}

// Sink is a driver.Bucket on an S3 bucket and prefix. It is safe for
// concurrent use.
type Sink struct {
	client   *s3.Client
	uploader *manager.Uploader
	opts     Options
}

var _ driver.Bucket = (*Sink)(nil)

// New returns a sink writing with client as opts say.
func New(client *s3.Client, opts Options) (*Sink, error) {
	if client == nil {
		return nil, errors.New("s3 sink: nil client")
	}
	if opts.Bucket == "" {
		return nil, errors.New("s3 sink: empty bucket")
	}
	if opts.Prefix != "" {
		if err := sink.CheckKey(opts.Prefix); err != nil {
			return nil, fmt.Errorf("s3 sink: prefix: %w", err)
		}
		if len(opts.Prefix) > maxKeyLen/2 {
			return nil, fmt.Errorf("s3 sink: prefix %q: %d bytes, want at most %d", opts.Prefix, len(opts.Prefix), maxKeyLen/2)
		}
	}
	switch opts.SSE {
	case SSENone, SSEAES256:
		if opts.KMSKeyID != "" {
			return nil, fmt.Errorf("s3 sink: kms_key_id %q needs sse %q, not %q", opts.KMSKeyID, SSEKMS, opts.SSE)
		}
	case SSEKMS:
	default:
		return nil, fmt.Errorf("s3 sink: sse %q: want %q, %q or %q", opts.SSE, SSENone, SSEAES256, SSEKMS)
	}
	if opts.PartSize == 0 {
		opts.PartSize = DefaultPartSize
	}
	if opts.PartSize < MinPartSize {
		return nil, fmt.Errorf("s3 sink: part size %d: want at least %d", opts.PartSize, MinPartSize)
	}
	if opts.Concurrency == 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.Concurrency < 0 {
		return nil, fmt.Errorf("s3 sink: concurrency %d: want at least 1", opts.Concurrency)
	}
	up := manager.NewUploader(client, func(u *manager.Uploader) {
		u.PartSize = opts.PartSize
		u.Concurrency = opts.Concurrency
		u.LeavePartsOnError = false // abort failed multipart uploads (the default; relied on)
	})
	return &Sink{client: client, uploader: up, opts: opts}, nil
}

// String returns "s3://BUCKET/PREFIX" ("s3://BUCKET" without a prefix).
func (s *Sink) String() string {
	if s.opts.Prefix == "" {
		return "s3://" + s.opts.Bucket
	}
	return "s3://" + s.opts.Bucket + "/" + s.opts.Prefix
}

// MaxKeyLen is S3's 1,024 bytes less the prefix and its '/'.
func (s *Sink) MaxKeyLen() int {
	if s.opts.Prefix == "" {
		return maxKeyLen
	}
	return maxKeyLen - len(s.opts.Prefix) - 1
}

// MaxSegmentLen is MaxKeyLen: S3 keys have no segments.
func (s *Sink) MaxSegmentLen() int { return s.MaxKeyLen() }

// objectKey returns the S3 key of a sink key.
func (s *Sink) objectKey(key string) string {
	if s.opts.Prefix == "" {
		return key
	}
	return s.opts.Prefix + "/" + key
}

// Put uploads body: one PutObject up to Options.PartSize bytes, else a
// multipart upload (never conditional). Put's Attrs.Modified is this
// machine's clock when the upload ended; Stat, Get and List give S3's.
func (s *Sink) Put(ctx context.Context, key string, body io.ReadSeeker, size int64, opts driver.PutOptions) (driver.Attrs, error) {
	in := &s3.PutObjectInput{
		Bucket:            aws.String(s.opts.Bucket),
		Key:               aws.String(s.objectKey(key)),
		Body:              body,
		ChecksumAlgorithm: types.ChecksumAlgorithmSha256,
	}
	if opts.ContentType != "" {
		in.ContentType = aws.String(opts.ContentType)
	}
	switch s.opts.SSE {
	case SSEAES256:
		in.ServerSideEncryption = types.ServerSideEncryptionAes256
	case SSEKMS:
		in.ServerSideEncryption = types.ServerSideEncryptionAwsKms
		if s.opts.KMSKeyID != "" {
			in.SSEKMSKeyId = aws.String(s.opts.KMSKeyID)
		}
	}
	conditional := opts.IfNoneMatch || opts.IfMatch != ""
	if size > s.opts.PartSize {
		if conditional {
			return driver.Attrs{}, fmt.Errorf("conditional put of %d bytes: at most the part size, %d, can be one request", size, s.opts.PartSize)
		}
		return s.putMultipart(ctx, key, in, size)
	}
	in.ContentLength = aws.Int64(size)
	if !conditional {
		if _, err := body.Seek(0, io.SeekStart); err != nil {
			return driver.Attrs{}, fmt.Errorf("body: %w", err)
		}
		out, err := s.client.PutObject(ctx, in)
		if err != nil {
			return driver.Attrs{}, err
		}
		return s.putAttrs(key, size, out.ETag), nil
	}
	if opts.IfNoneMatch {
		in.IfNoneMatch = aws.String("*")
	} else {
		in.IfMatch = aws.String(opts.IfMatch)
	}
	return s.putConditional(ctx, key, in, body, size, opts)
}

func (s *Sink) putAttrs(key string, size int64, etag *string) driver.Attrs {
	return driver.Attrs{Key: key, Size: size, ETag: aws.ToString(etag), Modified: time.Now().UTC()}
}

// putConditional sends in (If-None-Match or If-Match set), retrying on 409
// ConditionalRequestConflict, and maps a failed condition to
// ErrPrecondition, unless a retried request finds the Put's own bytes.
func (s *Sink) putConditional(ctx context.Context, key string, in *s3.PutObjectInput, body io.ReadSeeker, size int64, opts driver.PutOptions) (driver.Attrs, error) {
	var retries atomic.Int32
	countRetries := func(o *s3.Options) { o.Retryer = countingRetryer{Retryer: o.Retryer, n: &retries} }
	for attempt := 1; ; attempt++ {
		if _, err := body.Seek(0, io.SeekStart); err != nil {
			return driver.Attrs{}, fmt.Errorf("body: %w", err)
		}
		out, err := s.client.PutObject(ctx, in, countRetries)
		if err == nil {
			return s.putAttrs(key, size, out.ETag), nil
		}
		code, status := errorCode(err), httpStatus(err)
		var failed bool
		switch {
		case status == http.StatusPreconditionFailed || code == "PreconditionFailed":
			failed = true
		case opts.IfMatch != "" && objectMissing(err):
			// S3 answers If-Match on a missing key with 404 NoSuchKey.
			failed = true
		case status == http.StatusConflict || code == "ConditionalRequestConflict":
			if attempt < conflictAttempts {
				// Not applied: wait for the other write, then try again.
				t := time.NewTimer(conflictBackoff << (attempt - 1))
				select {
				case <-t.C:
					continue
				case <-ctx.Done():
					t.Stop()
					return driver.Attrs{}, errors.Join(err, ctx.Err())
				}
			}
			failed = true
		}
		if !failed {
			return driver.Attrs{}, err
		}
		if retries.Load() > 0 {
			a, ok, rerr := s.holds(ctx, key, body, size)
			if rerr != nil {
				return driver.Attrs{}, fmt.Errorf("%w: %w (and reading it back after a retry: %w)", driver.ErrPrecondition, err, rerr)
			}
			if ok {
				return a, nil
			}
		}
		return driver.Attrs{}, fmt.Errorf("%w: %w", driver.ErrPrecondition, err)
	}
}

// holds reports whether the object at key is exactly the size bytes of
// body, and returns its Attrs when it is.
func (s *Sink) holds(ctx context.Context, key string, body io.ReadSeeker, size int64) (driver.Attrs, bool, error) {
	if _, err := body.Seek(0, io.SeekStart); err != nil {
		return driver.Attrs{}, false, err
	}
	want := sha256.New()
	if _, err := io.Copy(want, body); err != nil {
		return driver.Attrs{}, false, err
	}
	r, a, err := s.Get(ctx, key)
	if errors.Is(err, driver.ErrNotFound) {
		return driver.Attrs{}, false, nil
	}
	if err != nil {
		return driver.Attrs{}, false, err
	}
	defer r.Close()
	if a.Size != size {
		return driver.Attrs{}, false, nil
	}
	got := sha256.New()
	if _, err := io.Copy(got, r); err != nil {
		return driver.Attrs{}, false, err
	}
	return a, bytes.Equal(got.Sum(nil), want.Sum(nil)), nil
}

// countingRetryer counts the retries the SDK makes.
type countingRetryer struct {
	aws.Retryer
	n *atomic.Int32
}

func (c countingRetryer) RetryDelay(attempt int, err error) (time.Duration, error) {
	c.n.Add(1)
	return c.Retryer.RetryDelay(attempt, err)
}

func (c countingRetryer) GetAttemptToken(ctx context.Context) (func(error) error, error) {
	if v2, ok := c.Retryer.(aws.RetryerV2); ok {
		return v2.GetAttemptToken(ctx)
	}
	return c.Retryer.GetInitialToken(), nil
}

// putMultipart uploads in through the upload manager.
func (s *Sink) putMultipart(ctx context.Context, key string, in *s3.PutObjectInput, size int64) (driver.Attrs, error) {
	if _, err := in.Body.(io.Seeker).Seek(0, io.SeekStart); err != nil {
		return driver.Attrs{}, fmt.Errorf("body: %w", err)
	}
	out, err := s.uploader.Upload(ctx, in)
	if err != nil {
		return driver.Attrs{}, errors.Join(err, s.abortMultipart(ctx, in.Key, err))
	}
	return s.putAttrs(key, size, out.ETag), nil
}

// abortMultipart aborts the multipart upload a failed Upload left, if
// any. The manager aborts too, but with the upload's context, which is
// cancelled when the failure was a cancellation; this uses a fresh one.
func (s *Sink) abortMultipart(ctx context.Context, key *string, uploadErr error) error {
	var mf manager.MultiUploadFailure
	if !errors.As(uploadErr, &mf) || mf.UploadID() == "" {
		return nil
	}
	// Not fenced: an abort only discards the parts, and a run that lost
	// its lease must not leave them stored.
	actx, cancel := context.WithTimeout(fence.Without(context.WithoutCancel(ctx)), abortTimeout)
	defer cancel()
	_, err := s.client.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{
		Bucket:   aws.String(s.opts.Bucket),
		Key:      key,
		UploadId: aws.String(mf.UploadID()),
	})
	var nsu *types.NoSuchUpload
	if err == nil || errors.As(err, &nsu) || errorCode(err) == "NoSuchUpload" {
		return nil
	}
	return fmt.Errorf("abort multipart upload %s of s3://%s/%s: %w", mf.UploadID(), s.opts.Bucket, *key, err)
}

// Get reads the object at key, verifying its checksum when the server
// stored a whole-object one.
func (s *Sink) Get(ctx context.Context, key string) (io.ReadCloser, driver.Attrs, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{
		Bucket:       aws.String(s.opts.Bucket),
		Key:          aws.String(s.objectKey(key)),
		ChecksumMode: types.ChecksumModeEnabled,
	}, func(o *s3.Options) {
		// Multipart objects have a checksum of part checksums, which a
		// reader cannot check; the SDK would log each skip.
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	if err != nil {
		if objectMissing(err) {
			return nil, driver.Attrs{}, fmt.Errorf("%w: %w", driver.ErrNotFound, err)
		}
		return nil, driver.Attrs{}, err
	}
	return out.Body, driver.Attrs{
		Key:      key,
		Size:     aws.ToInt64(out.ContentLength),
		ETag:     aws.ToString(out.ETag),
		Modified: aws.ToTime(out.LastModified).UTC(),
	}, nil
}

// Stat returns the object's Attrs with HeadObject. Its 404 does not say
// whether the key or the bucket is missing: HeadBucket tells, so that a
// missing bucket is an error, not ErrNotFound.
func (s *Sink) Stat(ctx context.Context, key string) (driver.Attrs, error) {
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{
		Bucket: aws.String(s.opts.Bucket),
		Key:    aws.String(s.objectKey(key)),
	})
	if err != nil {
		if !objectMissing(err) {
			return driver.Attrs{}, err
		}
		if _, berr := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(s.opts.Bucket)}); berr != nil {
			return driver.Attrs{}, fmt.Errorf("bucket s3://%s: %w", s.opts.Bucket, berr)
		}
		return driver.Attrs{}, fmt.Errorf("%w: %w", driver.ErrNotFound, err)
	}
	return driver.Attrs{
		Key:      key,
		Size:     aws.ToInt64(out.ContentLength),
		ETag:     aws.ToString(out.ETag),
		Modified: aws.ToTime(out.LastModified).UTC(),
	}, nil
}

// List lists the objects under prefix with ListObjectsV2, page by page.
// Objects whose key (below the sink's prefix) is not a valid sink key are
// skipped.
func (s *Sink) List(ctx context.Context, prefix string) ([]driver.Attrs, error) {
	return s.ListAfter(ctx, prefix, "")
}

// ListAfter is List from the key after `after` on (ListObjectsV2's
// StartAfter): driver.AfterLister.
func (s *Sink) ListAfter(ctx context.Context, prefix, after string) ([]driver.Attrs, error) {
	in := &s3.ListObjectsV2Input{Bucket: aws.String(s.opts.Bucket)}
	strip := ""
	if s.opts.Prefix != "" {
		strip = s.opts.Prefix + "/"
	}
	if full := strip + prefix; full != "" {
		in.Prefix = aws.String(full)
	}
	if after != "" {
		in.StartAfter = aws.String(strip + after)
	}
	var out []driver.Attrs
	p := s3.NewListObjectsV2Paginator(s.client, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Contents {
			k := aws.ToString(o.Key)
			if len(k) < len(strip) || k[:len(strip)] != strip {
				continue
			}
			k = k[len(strip):]
			if sink.CheckKey(k) != nil {
				continue
			}
			out = append(out, driver.Attrs{
				Key:      k,
				Size:     aws.ToInt64(o.Size),
				ETag:     aws.ToString(o.ETag),
				Modified: aws.ToTime(o.LastModified).UTC(),
			})
		}
	}
	return out, nil
}

// Delete removes the object with DeleteObject; S3 answers a missing key
// with success too.
func (s *Sink) Delete(ctx context.Context, key string) error {
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{
		Bucket: aws.String(s.opts.Bucket),
		Key:    aws.String(s.objectKey(key)),
	})
	if err != nil && !objectMissing(err) {
		return err
	}
	return nil
}
