package main

import (
	"net/http/httptest"
	"testing"
)

// Every response of a host in AltSvc carries its header, a 404 too; other hosts' carry none.
func TestAltSvcIsSentPerHost(t *testing.T) {
	h := &Handler{Page: &Page{}, Unserved: &UnservedLog{f: nil},
		AltSvc: map[string]string{"a.test": `h3=":443"; ma=86400`}}
	for host, want := range map[string]string{"a.test": `h3=":443"; ma=86400`, "b.test": ""} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "https://"+host+"/none", nil)
		h.ServeHTTP(w, r) // a 404: the page has nothing (the unserved log has no file: not written)
		if got := w.Header().Get("Alt-Svc"); got != want {
			t.Errorf("%s: Alt-Svc %q, want %q", host, got, want)
		}
	}
}
