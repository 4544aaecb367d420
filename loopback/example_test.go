package loopback_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/metaharness/metaharness/loopback"
)

// A child holds only the proxy's placeholder; the upstream sees the real
// token, and the proxy keeps a record of the request with neither.
func Example() {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "upstream got %s with the real token: %t", r.URL.Path, r.Header.Get("X-Api-Key") == "sk-real")
	}))
	defer upstream.Close()

	p, err := loopback.New(loopback.Config{
		Upstream: upstream.URL,
		Token:    loopback.TokenSource{Env: "MODEL_API_KEY"},
		LookupEnv: func(k string) (string, bool) {
			return map[string]string{"MODEL_API_KEY": "sk-real"}[k], k == "MODEL_API_KEY"
		},
	})
	if err != nil {
		panic(err)
	}
	if err := p.Start(); err != nil {
		panic(err)
	}

	// What the child does, with the placeholder as its key.
	req, _ := http.NewRequest("POST", p.BaseURL()+"/v1/messages", strings.NewReader(`{}`))
	req.Header.Set("X-Api-Key", p.Placeholder())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(string(body))

	_ = p.Close()
	for _, rec := range p.Records() {
		fmt.Println(rec.Method, rec.Path, rec.Status)
	}
	// Output:
	// upstream got /v1/messages with the real token: true
	// POST /v1/messages 200
}
