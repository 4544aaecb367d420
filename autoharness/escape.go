package autoharness

import (
	"errors"
	"strings"
)

// PathEscape escapes s for one segment of a route, or a query value, as
// JavaScript's encodeURIComponent does (the control plane's own clients
// do): every byte of its UTF-8 but A–Z a–z 0–9 - _ . ! ~ * ' ( ) becomes
// %XX. url.PathEscape differs both ways (it keeps : @ & = + $ and escapes
// ! * ' ( )). A "." or ".." segment is not escaped by it: an id goes
// through segment, which refuses them.
func PathEscape(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("-_.!~*'()", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// segment is id escaped for a route, refusing what would not name one
// record: nothing, or "." and "..", which a server or a proxy on the way
// may read as the route's parent.
func segment(what, id string) (string, error) {
	switch id {
	case "":
		return "", errors.New("autoharness: a " + what + " id is required")
	case ".", "..":
		return "", errors.New(`autoharness: a ` + what + ` id must not be "." or ".."`)
	}
	return PathEscape(id), nil
}

// Query is a route's query, "?k=v&…", of the pairs whose value is not "",
// in order, each escaped by PathEscape; "" when every value is "".
func Query(pairs ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			continue
		}
		if b.Len() == 0 {
			b.WriteByte('?')
		} else {
			b.WriteByte('&')
		}
		b.WriteString(PathEscape(pairs[i]))
		b.WriteByte('=')
		b.WriteString(PathEscape(pairs[i+1]))
	}
	return b.String()
}
