package webhook

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// The test vector of the Standard Webhooks reference implementations
// (their libraries' tests: secret, id, timestamp, body and signature).
const (
	vecSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vecID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vecTS     = 1614265330
	vecBody   = `{"test": 2432232314}`
	vecSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func TestSignVector(t *testing.T) {
	key, err := Key(vecSecret)
	if err != nil {
		t.Fatal(err)
	}
	if got := Sign(key, vecID, vecTS, []byte(vecBody)); got != vecSig {
		t.Fatalf("Sign = %s, want %s", got, vecSig)
	}
	h := http.Header{}
	h.Set(HeaderID, vecID)
	h.Set(HeaderTimestamp, "1614265330")
	h.Set(HeaderSignature, "v1,bm9wZQ== "+vecSig)
	if err := Verify(key, h, []byte(vecBody), time.Unix(vecTS+10, 0), 5*time.Minute); err != nil {
		t.Errorf("Verify: %v", err)
	}
	if err := Verify(key, h, []byte(vecBody+" "), time.Unix(vecTS, 0), 0); !errors.Is(err, ErrBadSignature) {
		t.Errorf("Verify of a changed body: %v", err)
	}
	if err := Verify(key, h, []byte(vecBody), time.Unix(vecTS+3600, 0), 5*time.Minute); err == nil {
		t.Errorf("Verify of an old timestamp: no error")
	}
	if _, err := Key("whsec_!!"); err == nil {
		t.Errorf("Key of bad base64: no error")
	}
}

func TestSend(t *testing.T) {
	key, _ := Key(vecSecret)
	var got int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if err := Verify(key, r.Header, b, time.Now(), time.Minute); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		got++
		if r.Header.Get(HeaderID) == "evt_fail" {
			http.Error(w, "down", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	s := &Sender{}
	if err := s.Send(context.Background(), srv.URL, key, "evt_1", []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	var se *StatusError
	if err := s.Send(context.Background(), srv.URL, key, "evt_fail", []byte(`{}`)); !errors.As(err, &se) || se.Code != 503 {
		t.Errorf("Send to a failing endpoint: %v", err)
	}
	if err := s.Send(context.Background(), srv.URL, []byte("other"), "evt_2", []byte(`{}`)); !errors.As(err, &se) || se.Code != 401 {
		t.Errorf("Send with another key: %v", err)
	}
	if got != 2 {
		t.Errorf("%d verified deliveries, want 2", got)
	}
}
