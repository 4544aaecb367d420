package browser

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDrivesAPage: a page opens from a file, its DOM is read, a click
// reaches its script, and it asked for nothing but itself.
func TestDrivesAPage(t *testing.T) {
	b := Start(t)
	page := filepath.Join(t.TempDir(), "p.html")
	html := `<!DOCTYPE html><html><body><button id="b" style="position:absolute;left:10px;top:10px;width:100px;height:40px">go</button>
<script>document.getElementById('b').addEventListener('click', () => document.body.dataset.clicked = 'yes')</script></body></html>`
	if err := os.WriteFile(page, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := b.Open("file://"+page, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Click(50, 30); err != nil {
		t.Fatal(err)
	}
	var clicked string
	if err := p.Eval(`document.body.dataset.clicked || ""`, &clicked); err != nil {
		t.Fatal(err)
	}
	if clicked != "yes" {
		t.Errorf("the click did not reach the page's script (%q)", clicked)
	}
	if r := p.Requests(); len(r) != 1 || r[0] != "file://"+page {
		t.Errorf("the page asked for %q", r)
	}
	off, err := b.Open("file://"+page, Options{NoScripts: true})
	if err != nil {
		t.Fatal(err)
	}
	_ = off.Click(50, 30)
	clicked = ""
	if err := off.Eval(`document.body.dataset.clicked || ""`, &clicked); err != nil {
		t.Fatal(err)
	}
	if clicked != "" {
		t.Error("with scripts off the page's script still ran")
	}
	if err := p.Screenshot(filepath.Join(t.TempDir(), "s.png")); err != nil {
		t.Fatal(err)
	}
}
