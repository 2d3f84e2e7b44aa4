package main

import (
	"net/http"
	"time"
)

// webhookClient is the HTTP client of the webhook POSTs: a timeout, and no
// redirect followed (an endpoint that moved must be configured anew).
func webhookClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}
