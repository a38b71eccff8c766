package main

import (
	"reflect"
	"testing"
)

// The same body gives the digests h2lab.pages.request_body gives (tests/unit/test_pages_request_body.py
// holds the same figures): a page's POSTs match in the origin as in the Python replay rule.
func TestFingerprintAgreesWithPython(t *testing.T) {
	got := fingerprint([]byte("user=alice&password=s%20ecret&csrf=abc123"),
		"application/x-www-form-urlencoded; charset=UTF-8")
	want := RequestBody{
		SHA256: "e6041cae76d168d14b1a0a109ae5675006f2d2f63549035ce98ad3a91a7f6231",
		Fields: [][2]string{{"user", "2bd806c97f0e00af"}, {"password", "5dab2cfbccd8e2e0"},
			{"csrf", "6ca13d52ca70c883"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fingerprint = %+v, want %+v", got, want)
	}
	if fp := fingerprint([]byte(`{"a":1}`), "application/json"); len(fp.Fields) != 0 {
		t.Fatalf("a JSON body has no form fields: %+v", fp)
	}
}

func TestBestByBodySameBodyElseMostFieldsElseFirst(t *testing.T) {
	form := "application/x-www-form-urlencoded"
	alice := fingerprint([]byte("user=alice&csrf=one"), form)
	bob := fingerprint([]byte("user=bob&csrf=two"), form)
	a := &Resource{URL: "a", Request: &alice}
	b := &Resource{URL: "b", Request: &bob}
	none := &Resource{URL: "none"}
	if got := bestByBody([]*Resource{a, b}, bob); got != b {
		t.Fatalf("same body: got %s", got.URL)
	}
	// bob again with another CSRF token: the form's other fields decide
	if got := bestByBody([]*Resource{a, b}, fingerprint([]byte("user=bob&csrf=three"), form)); got != b {
		t.Fatalf("fields: got %s", got.URL)
	}
	// nothing agrees: the first recorded
	if got := bestByBody([]*Resource{none, a, b}, fingerprint([]byte("user=eve"), form)); got != none {
		t.Fatalf("none agrees: got %s", got.URL)
	}
}
