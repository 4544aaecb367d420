package loopbackhost

import "testing"

func TestIs(t *testing.T) {
	for h, want := range map[string]bool{
		"127.0.0.1": true, "127.1.2.3": true, "::1": true, "[::1]": true, "localhost": true, "LocalHost": true,
		"": false, "0.0.0.0": false, "192.168.1.10": false, "10.0.0.1": false, "::": false,
		"localhost.example.com": false, "127.0.0.1.example.com": false, "example.com": false, "[::1]:80": false,
	} {
		if got := Is(h); got != want {
			t.Errorf("Is(%q) = %v, want %v", h, got, want)
		}
	}
}
