// Package mailpit is a test helper: it reads what a mailpit server
// (scripts/servers.sh) received, through its HTTP API.
package mailpit

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// Address is a mailbox as the API gives it.
type Address struct {
	Name    string `json:"Name"`
	Address string `json:"Address"`
}

// Attachment is a part of a message.
type Attachment struct {
	PartID      string `json:"PartID"`
	FileName    string `json:"FileName"`
	ContentType string `json:"ContentType"`
	Size        int    `json:"Size"`
}

// Message is one received message (the summary fields of the list, and
// the details of /api/v1/message/{ID}).
type Message struct {
	ID          string       `json:"ID"`
	MessageID   string       `json:"MessageID"`
	From        Address      `json:"From"`
	To          []Address    `json:"To"`
	Bcc         []Address    `json:"Bcc"`
	ReplyTo     []Address    `json:"ReplyTo"`
	Subject     string       `json:"Subject"`
	Text        string       `json:"Text"`
	Attachments []Attachment `json:"Attachments"`
}

// Server is a mailpit API, e.g. http://127.0.0.1:8025.
type Server struct{ API string }

func (s Server) get(ctx context.Context, path string, out any) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.API+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("mailpit GET %s: %s: %s", path, resp.Status, b)
	}
	if out != nil {
		return b, json.Unmarshal(b, out)
	}
	return b, nil
}

// Search returns the messages matching a mailpit search query (e.g.
// `to:"a@b.c"`, `subject:"x"`), newest first, up to 1000. Only their
// summary fields are set; Get reads one whole.
func (s Server) Search(ctx context.Context, query string) ([]Message, error) {
	return s.list(ctx, "/api/v1/search?limit=1000&query="+url.QueryEscape(query))
}

// All returns every message, newest first (up to 5000).
func (s Server) All(ctx context.Context) ([]Message, error) {
	return s.list(ctx, "/api/v1/messages?limit=5000")
}

// Get returns message id with its details.
func (s Server) Get(ctx context.Context, id string) (Message, error) {
	var m Message
	_, err := s.get(ctx, "/api/v1/message/"+url.PathEscape(id), &m)
	return m, err
}

// Part returns the decoded bytes of a message's part (an attachment).
func (s Server) Part(ctx context.Context, id, partID string) ([]byte, error) {
	return s.get(ctx, "/api/v1/message/"+url.PathEscape(id)+"/part/"+url.PathEscape(partID), nil)
}

// list reads a list of summaries (their Attachments is a count, left out).
func (s Server) list(ctx context.Context, path string) ([]Message, error) {
	var res struct {
		Messages []struct {
			ID, MessageID, Subject string
			From                   Address
			To, Bcc                []Address
		} `json:"messages"`
	}
	if _, err := s.get(ctx, path, &res); err != nil {
		return nil, err
	}
	out := make([]Message, len(res.Messages))
	for i, m := range res.Messages {
		out[i] = Message{ID: m.ID, MessageID: m.MessageID, Subject: m.Subject, From: m.From, To: m.To, Bcc: m.Bcc}
	}
	return out, nil
}
