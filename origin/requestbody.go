package main

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// RequestBody is what a page keeps of a recorded request's body: its SHA-256, and for a form
// each field's name and the first 16 hex digits of its value's SHA-256 (never the values).
// h2lab.pages.request_body holds the same rule; docs/pages.md, "POSTs".
type RequestBody struct {
	SHA256 string      `json:"sha256"`
	Fields [][2]string `json:"fields"`
}

// maxRequestBody is the most of a request's body read to match it (a login form's is small).
const maxRequestBody = 1 << 20

const maxFormFields = 200

// volatile names the form fields whose values change per visit: left out of the comparison.
var volatile = regexp.MustCompile(`(?i)csrf|xsrf|token|nonce|timestamp|^ts$|^_`)

func digest16(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}

// fingerprint is body's RequestBody (its form fields when contentType is a form).
func fingerprint(body []byte, contentType string) RequestBody {
	sum := sha256.Sum256(body)
	rb := RequestBody{SHA256: hex.EncodeToString(sum[:])}
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt != "application/x-www-form-urlencoded" {
		return rb
	}
	for _, part := range strings.Split(string(body), "&") {
		if part == "" || len(rb.Fields) >= maxFormFields {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		key, err1 := url.QueryUnescape(k)
		value, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil {
			continue
		}
		if len(key) > 200 {
			key = key[:200]
		}
		rb.Fields = append(rb.Fields, [2]string{key, digest16([]byte(value))})
	}
	return rb
}

// agreement counts the fields of asked (not volatile) that recorded has with the same value
// (each name's first value).
func agreement(recorded, asked [][2]string) int {
	mine := map[string]string{}
	for i := len(recorded) - 1; i >= 0; i-- {
		mine[recorded[i][0]] = recorded[i][1]
	}
	theirs := map[string]string{}
	for i := len(asked) - 1; i >= 0; i-- {
		theirs[asked[i][0]] = asked[i][1]
	}
	n := 0
	for k, v := range theirs {
		if !volatile.MatchString(k) && mine[k] == v {
			n++
		}
	}
	return n
}

// bestByBody picks among the recorded requests of one method and target (in recording order)
// the one that answers asked: the same body, else the form whose fields agree most (the first
// of those), else the first.
func bestByBody(candidates []*Resource, asked RequestBody) *Resource {
	for _, r := range candidates {
		if r.Request != nil && r.Request.SHA256 == asked.SHA256 {
			return r
		}
	}
	best, top := candidates[0], 0
	for _, r := range candidates {
		if r.Request == nil {
			continue
		}
		if n := agreement(r.Request.Fields, asked.Fields); n > top {
			best, top = r, n
		}
	}
	return best
}

// readBody reads at most maxRequestBody bytes of r's body (the rest left unread).
func readBody(r *http.Request) []byte {
	if r.Body == nil {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(r.Body, maxRequestBody))
	return b
}
