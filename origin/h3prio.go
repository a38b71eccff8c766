package main

import (
	"net/http"
	"reflect"
	"unsafe"

	"github.com/quic-go/quic-go/http3"
)

// h3Priority is the priority every HTTP/3 response gets under a scheduler, or nil where
// quic-go's own schedule is the scheduler's: quic-go sends a stream's data by the RFC 9218
// urgency and incremental flag of its request's priority field and of later PRIORITY_UPDATE
// frames (rfc9218; "client", RFC 7540's tree, has no HTTP/3 form, so it is this too). fcfs is
// every response at one urgency, not incremental (quic-go: in stream order, one after
// another); rr is one urgency, incremental (round robin).
func h3Priority(scheduler string) *Urgency {
	switch scheduler {
	case "fcfs":
		return &Urgency{U: 3}
	case "rr":
		return &Urgency{U: 3, Incremental: true}
	}
	return nil
}

// setH3Priority sets the priority of the HTTP/3 stream w answers on. quic-go gives a handler
// its stream only to take it over (HTTPStreamer), so this reads the response writer's stream
// field (quic-go v0.65.0, pinned in go.mod; TestSetH3PriorityReachesTheStream fails if a new
// version moves it). A PRIORITY_UPDATE the client sends after the request still applies (quic-go
// handles the control stream itself): the docs say so.
func setH3Priority(w http.ResponseWriter, p Urgency) bool {
	v := reflect.ValueOf(w)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return false
	}
	f := v.Elem().FieldByName("str")
	if !f.IsValid() || f.Type() != reflect.TypeFor[*http3.Stream]() {
		return false
	}
	str := *(**http3.Stream)(unsafe.Pointer(f.UnsafeAddr()))
	if str == nil {
		return false
	}
	str.SetPriority(int8(p.U), p.Incremental)
	return true
}
