// Package s3sink is a report.Sink on an S3 bucket and prefix.
//
// Writes stream through an io.Pipe into the SDK's upload manager: a single
// PutObject below Options.PartSize, a multipart upload above it, with at
// most (Concurrency+1)*PartSize bytes buffered per writer. Every request
// carries a SHA-256 checksum the server verifies. A failed or aborted
// multipart upload is aborted on the server, so no truncated object is
// ever visible and no parts are left behind.
package s3sink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/reportjob/reportjob/internal/report"
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

// Sink is a report.Sink on an S3 bucket and prefix. It is safe for
// concurrent use.
type Sink struct {
	client   *s3.Client
	uploader *manager.Uploader
	opts     Options
}

var _ report.Sink = (*Sink)(nil)

// New returns a sink writing with client as opts say.
func New(client *s3.Client, opts Options) (*Sink, error) {
	if client == nil {
		return nil, errors.New("s3 sink: nil client")
	}
	if opts.Bucket == "" {
		return nil, errors.New("s3 sink: empty bucket")
	}
	if opts.Prefix != "" {
		if err := report.CheckKey(opts.Prefix); err != nil {
			return nil, fmt.Errorf("s3 sink: prefix: %w", err)
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

// objectKey returns the S3 key of a sink key.
func (s *Sink) objectKey(key string) string {
	if s.opts.Prefix == "" {
		return key
	}
	return s.opts.Prefix + "/" + key
}

// URL returns s3://bucket/key for a sink key, for messages.
func (s *Sink) URL(key string) string {
	return "s3://" + s.opts.Bucket + "/" + s.objectKey(key)
}

// NewWriter starts uploading key. The upload runs in a goroutine reading
// the pipe the writer feeds.
func (s *Sink) NewWriter(ctx context.Context, key, contentType string) (report.ObjectWriter, error) {
	if err := report.CheckKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("put %s: %w", s.URL(key), err)
	}
	in := &s3.PutObjectInput{
		Bucket:            aws.String(s.opts.Bucket),
		Key:               aws.String(s.objectKey(key)),
		ChecksumAlgorithm: types.ChecksumAlgorithmSha256,
	}
	if contentType != "" {
		in.ContentType = aws.String(contentType)
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
	pr, pw := io.Pipe()
	in.Body = pr
	uctx, cancel := context.WithCancel(ctx)
	w := &writer{url: s.URL(key), ctx: ctx, pw: pw, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		_, err := s.uploader.Upload(uctx, in)
		if err != nil {
			w.cleanupErr = s.abortMultipart(ctx, in.Key, err)
		}
		w.err = err
		// Unblock a Write waiting on a reader that has stopped reading.
		if err == nil {
			err = errUploadDone
		}
		pr.CloseWithError(err)
	}()
	// Cancelling ctx aborts the write: fail the reader's next read.
	w.stop = context.AfterFunc(ctx, func() { pw.CloseWithError(ctx.Err()) })
	return w, nil
}

var (
	errAborted    = errors.New("write aborted")
	errUploadDone = errors.New("upload already finished")
	errClosed     = errors.New("object writer already committed or aborted")
)

// abortMultipart aborts the multipart upload a failed Upload left, if
// any. The manager aborts too, but with the upload's context, which is
// cancelled when the failure was a cancellation; this uses a fresh one.
func (s *Sink) abortMultipart(ctx context.Context, key *string, uploadErr error) error {
	var mf manager.MultiUploadFailure
	if !errors.As(uploadErr, &mf) || mf.UploadID() == "" {
		return nil
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
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

// writer feeds an upload through a pipe.
type writer struct {
	url    string
	ctx    context.Context
	pw     *io.PipeWriter
	cancel context.CancelFunc
	stop   func() bool
	done   chan struct{} // closed when the upload goroutine ends

	mu     sync.Mutex
	closed bool

	// Set by the upload goroutine before done is closed.
	err        error // the upload's result
	cleanupErr error // aborting a failed multipart upload failed
}

func (w *writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return 0, fmt.Errorf("put %s: %w", w.url, errClosed)
	}
	n, err := w.pw.Write(p)
	if err != nil {
		if cerr := w.ctx.Err(); cerr != nil && errors.Is(err, io.ErrClosedPipe) {
			err = cerr // closed by the cancellation
		}
		return n, fmt.Errorf("put %s: %w", w.url, err)
	}
	return n, nil
}

// finish marks the writer closed; it returns false if it already was.
func (w *writer) finish() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return false
	}
	w.closed = true
	w.stop()
	return true
}

// Commit ends the stream and waits for the upload: the object is visible,
// whole, when Commit returns nil.
func (w *writer) Commit() error {
	if !w.finish() {
		return nil
	}
	if err := w.ctx.Err(); err != nil {
		w.pw.CloseWithError(err)
		w.cancel()
		<-w.done
		return fmt.Errorf("put %s: %w", w.url, errors.Join(err, w.cleanupErr))
	}
	w.pw.Close()
	<-w.done
	w.cancel()
	if w.err != nil {
		return fmt.Errorf("put %s: %w", w.url, errors.Join(w.err, w.cleanupErr))
	}
	return nil
}

// Abort stops the upload and waits until any multipart upload is aborted.
func (w *writer) Abort() error {
	if !w.finish() {
		return nil
	}
	w.pw.CloseWithError(errAborted)
	w.cancel()
	<-w.done
	if w.cleanupErr != nil {
		return fmt.Errorf("abort %s: %w", w.url, w.cleanupErr)
	}
	return nil
}

// Open reads the object at key, verifying its checksum when the server
// stored a whole-object one.
func (s *Sink) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := report.CheckKey(key); err != nil {
		return nil, err
	}
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
			return nil, fmt.Errorf("get %s: %w: %w", s.URL(key), report.ErrNotFound, err)
		}
		return nil, fmt.Errorf("get %s: %w", s.URL(key), err)
	}
	return out.Body, nil
}

// List lists the objects under prefix with ListObjectsV2. Objects whose
// key (below the sink's prefix) is not a valid sink key are skipped.
func (s *Sink) List(ctx context.Context, prefix string) ([]report.ObjectInfo, error) {
	if err := report.CheckPrefix(prefix); err != nil {
		return nil, err
	}
	in := &s3.ListObjectsV2Input{Bucket: aws.String(s.opts.Bucket)}
	strip := ""
	if s.opts.Prefix != "" {
		strip = s.opts.Prefix + "/"
	}
	if full := strip + prefix; full != "" {
		in.Prefix = aws.String(full)
	}
	var out []report.ObjectInfo
	p := s3.NewListObjectsV2Paginator(s.client, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list s3://%s/%s: %w", s.opts.Bucket, strip+prefix, err)
		}
		for _, o := range page.Contents {
			k := aws.ToString(o.Key)
			if len(k) < len(strip) || k[:len(strip)] != strip {
				continue
			}
			k = k[len(strip):]
			if report.CheckKey(k) != nil {
				continue
			}
			out = append(out, report.ObjectInfo{Key: k, Size: aws.ToInt64(o.Size), Modified: aws.ToTime(o.LastModified).UTC()})
		}
	}
	return out, nil
}
