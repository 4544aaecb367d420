package actions

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
)

// The Action's inputs keep the meaning the control plane's own (Node)
// Action gives them, so the few places where Go and JavaScript read text
// differently are written here the JavaScript way.

// trim removes what JavaScript's String.prototype.trim removes: its white
// space (tab, vertical tab, form feed, space, no-break space, the byte
// order mark, every space separator) and line terminators (LF, CR, U+2028,
// U+2029). strings.TrimSpace differs: it trims U+0085 and keeps U+FEFF.
func trim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool {
		switch r {
		case '\t', '\n', '\v', '\f', '\r', ' ', 0xa0, 0xfeff, 0x2028, 0x2029:
			return true
		}
		return unicode.Is(unicode.Zs, r)
	})
}

// utf16Len is s's length as JavaScript counts it: UTF-16 code units.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// jsString is s as JSON.stringify writes it: only ", \ and the control
// characters escaped (\b \f \n \r \t, else \u00xx), nothing for HTML.
func jsString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				b.WriteString(`\u00`)
				b.WriteByte("0123456789abcdef"[r>>4])
				b.WriteByte("0123456789abcdef"[r&15])
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// jsNumber is f as JavaScript writes a number: the shortest digits that
// read back as f, in plain notation from 1e-6 up to below 1e21 and in
// exponent notation (1e+21, 1.5e-7) outside it; -0 is 0.
func jsNumber(f float64) string {
	if f == 0 {
		return "0"
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	mant, exp, _ := strings.Cut(strconv.FormatFloat(f, 'e', -1, 64), "e")
	digits := strings.Replace(mant, ".", "", 1)
	e, _ := strconv.Atoi(exp)
	k, n := len(digits), e+1 // the value is 0.digits × 10^n
	switch {
	case k <= n && n <= 21:
		return sign + digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		return sign + digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		return sign + "0." + strings.Repeat("0", -n) + digits
	}
	es := "+"
	if n-1 < 0 {
		es = "-"
	}
	abs := strconv.Itoa(max(n-1, 1-n))
	if k == 1 {
		return sign + digits + "e" + es + abs
	}
	return sign + digits[:1] + "." + digits[1:] + "e" + es + abs
}
