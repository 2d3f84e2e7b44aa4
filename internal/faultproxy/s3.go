package faultproxy

import (
	"net/http"
	"net/url"
	"strings"
)

// s3Operation names an S3 request (path-style addressing) and its key.
func s3Operation(r *http.Request) (op, key string) {
	q := r.URL.Query()
	path := strings.TrimPrefix(r.URL.Path, "/")
	if _, k, ok := strings.Cut(path, "/"); ok {
		key, _ = url.PathUnescape(k)
	}
	has := func(name string) bool { _, ok := q[name]; return ok }
	switch r.Method {
	case http.MethodPut:
		switch {
		case has("uploadId"):
			return "UploadPart", key
		case key == "":
			return "CreateBucket", key
		}
		return "PutObject", key
	case http.MethodPost:
		switch {
		case has("uploads"):
			return "CreateMultipartUpload", key
		case has("uploadId"):
			return "CompleteMultipartUpload", key
		case has("delete"):
			return "DeleteObjects", key
		}
	case http.MethodDelete:
		if has("uploadId") {
			return "AbortMultipartUpload", key
		}
		if key != "" {
			return "DeleteObject", key
		}
		return "DeleteBucket", key
	case http.MethodGet:
		switch {
		case key != "":
			return "GetObject", key
		case has("uploads"):
			return "ListMultipartUploads", key
		}
		return "ListObjects", key
	case http.MethodHead:
		if key != "" {
			return "HeadObject", key
		}
		return "HeadBucket", key
	}
	return r.Method, key
}
