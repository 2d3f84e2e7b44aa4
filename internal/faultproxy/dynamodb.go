package faultproxy

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
)

// addLimit adds "Limit": n to a Query request that has none.
func addLimit(body []byte, n int) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return body
	}
	if _, ok := m["Limit"]; ok {
		return body
	}
	m["Limit"] = json.RawMessage(strconv.Itoa(n))
	out, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return out
}

// unprocessed forwards the first keep requests of a batch call and hands
// the rest back unprocessed, merged with what the server left.
func (p *Proxy) unprocessed(w http.ResponseWriter, r *http.Request, req *Request, keep int) int {
	var in struct {
		RequestItems map[string]json.RawMessage
	}
	var full map[string]json.RawMessage
	if json.Unmarshal(req.Body, &full) != nil || json.Unmarshal(req.Body, &in) != nil || len(in.RequestItems) != 1 {
		return p.writeError(w, Fault{Status: http.StatusBadRequest, Code: "ValidationException"})
	}
	var table string
	var items json.RawMessage
	for t, v := range in.RequestItems {
		table, items = t, v
	}
	// sent and back are the table's entry of the request forwarded and of
	// the unprocessed part.
	var sent, back json.RawMessage
	var nsent int
	if req.Op == "BatchWriteItem" {
		var reqs []json.RawMessage
		if json.Unmarshal(items, &reqs) != nil {
			return p.writeError(w, Fault{Status: http.StatusBadRequest, Code: "ValidationException"})
		}
		k := min(keep, len(reqs))
		nsent = k
		sent, _ = json.Marshal(reqs[:k])
		if k < len(reqs) {
			back, _ = json.Marshal(reqs[k:])
		}
	} else {
		var ka map[string]json.RawMessage
		var keys []json.RawMessage
		if json.Unmarshal(items, &ka) != nil || json.Unmarshal(ka["Keys"], &keys) != nil {
			return p.writeError(w, Fault{Status: http.StatusBadRequest, Code: "ValidationException"})
		}
		k := min(keep, len(keys))
		nsent = k
		ka["Keys"], _ = json.Marshal(keys[:k])
		sent, _ = json.Marshal(ka)
		if k < len(keys) {
			ka["Keys"], _ = json.Marshal(keys[k:])
			back, _ = json.Marshal(ka)
		}
	}
	out := map[string]json.RawMessage{}
	if nsent > 0 {
		full["RequestItems"], _ = json.Marshal(map[string]json.RawMessage{table: sent})
		body, _ := json.Marshal(full)
		setBody(r, body)
		rec := httptest.NewRecorder()
		p.rp.ServeHTTP(rec, r)
		if rec.Code != http.StatusOK {
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			w.Write(rec.Body.Bytes())
			return rec.Code
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			return p.writeError(w, Fault{Status: http.StatusInternalServerError, Code: "InternalServerError"})
		}
	}
	if back != nil {
		field := "UnprocessedItems"
		if req.Op == "BatchGetItem" {
			field = "UnprocessedKeys"
		}
		left := map[string]json.RawMessage{}
		_ = json.Unmarshal(out[field], &left)
		if prev, ok := left[table]; ok && req.Op == "BatchWriteItem" {
			back = appendArrays(prev, back)
		} else if ok {
			back = mergeKeys(prev, back)
		}
		left[table] = back
		out[field], _ = json.Marshal(left)
	}
	if req.Op == "BatchGetItem" {
		if _, ok := out["Responses"]; !ok {
			out["Responses"] = json.RawMessage(`{}`)
		}
	}
	body, _ := json.Marshal(out)
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(http.StatusOK)
	w.Write(body)
	return http.StatusOK
}

func appendArrays(a, b json.RawMessage) json.RawMessage {
	var x, y []json.RawMessage
	_ = json.Unmarshal(a, &x)
	_ = json.Unmarshal(b, &y)
	out, _ := json.Marshal(append(x, y...))
	return out
}

func mergeKeys(a, b json.RawMessage) json.RawMessage {
	var x, y map[string]json.RawMessage
	_ = json.Unmarshal(a, &x)
	_ = json.Unmarshal(b, &y)
	y["Keys"] = appendArrays(x["Keys"], y["Keys"])
	out, _ := json.Marshal(y)
	return out
}
