package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/metaharness/metaharness/testkit/collector"
)

// collectors are the scripts' running collectors.
var collectors sync.Map // *testscript.TestScript → *collector.Collector

// collectorCmd runs the OpenTelemetry Collector's own OTLP receiver for a
// script (testkit/collector):
//
//	collector http|grpc    start one; $COLLECTOR is its endpoint
//	collector down|silent  $COLLECTOR is one that is not there, or never answers
//	collector spans FILE   wait for the root span, then write one line per span:
//	                       name, its parent's name (- for none), its trace id, its
//	                       attributes as JSON (keys sorted), its events' names
//	collector sent FILE    every byte the exporters sent it
func collectorCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: collector http|grpc|down|silent | collector spans|sent FILE")
	}
	switch args[0] {
	case collector.HTTP, "http", collector.GRPC:
		protocol := collector.HTTP
		if args[0] == collector.GRPC {
			protocol = collector.GRPC
		}
		c, err := collector.Start(protocol)
		ts.Check(err)
		ts.Defer(c.Stop)
		collectors.Store(ts, c)
		ts.Setenv("COLLECTOR", c.Endpoint)
	case "down":
		endpoint, err := collector.Down()
		ts.Check(err)
		ts.Setenv("COLLECTOR", endpoint)
	case "silent":
		s, err := collector.StartSilent()
		ts.Check(err)
		ts.Defer(s.Close)
		ts.Setenv("COLLECTOR", s.Endpoint)
	case "spans", "sent":
		if len(args) != 2 {
			ts.Fatalf("usage: collector %s FILE", args[0])
		}
		v, ok := collectors.Load(ts)
		if !ok {
			ts.Fatalf("collector %s: no collector was started", args[0])
		}
		c := v.(*collector.Collector)
		out := c.Sent()
		if args[0] == "spans" {
			out = []byte(spanLines(ts, c))
		}
		ts.Check(os.WriteFile(ts.MkAbs(args[1]), out, 0o644))
	default:
		ts.Fatalf("collector: no subcommand %q", args[0])
	}
}

// spanLines waits for a root span, then renders every span.
func spanLines(ts *testscript.TestScript, c *collector.Collector) string {
	deadline := time.Now().Add(10 * time.Second)
	var spans []ptrace.Span
	for {
		spans = c.Spans()
		root := false
		for _, s := range spans {
			root = root || s.ParentSpanID().IsEmpty()
		}
		if root || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	names := map[string]string{}
	for _, s := range spans {
		names[s.SpanID().String()] = s.Name()
	}
	var b strings.Builder
	for _, s := range spans {
		parent := "-"
		if !s.ParentSpanID().IsEmpty() {
			parent = names[s.ParentSpanID().String()]
		}
		attrs := s.Attributes().AsRaw()
		keys := make([]string, 0, len(attrs))
		for k := range attrs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			v, _ := json.Marshal(attrs[k])
			parts = append(parts, fmt.Sprintf("%q:%s", k, v))
		}
		var events []string
		for i := 0; i < s.Events().Len(); i++ {
			e := s.Events().At(i)
			name := e.Name()
			if code, ok := e.Attributes().Get("metaharness.warning.code"); ok {
				name += "(" + code.AsString() + ")"
			}
			events = append(events, name)
		}
		fmt.Fprintf(&b, "%s\t%s\t%s\t{%s}\t%s\n", s.Name(), parent, s.TraceID(), strings.Join(parts, ","), strings.Join(events, " "))
	}
	return b.String()
}
