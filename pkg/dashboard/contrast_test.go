package dashboard

import (
	"math"
	"regexp"
	"strconv"
	"testing"
)

// The stylesheet's text colours contrast with the background at least 7:1 (WCAG AAA), and the
// state colours, which only repeat a state written out in words, at least 3:1 (WCAG's bound for
// graphics).
func TestContrast(t *testing.T) {
	css, err := assets.ReadFile("static/style.css")
	if err != nil {
		t.Fatal(err)
	}
	colours := map[string]string{}
	for _, m := range regexp.MustCompile(`--([a-z]+):\s*(#[0-9a-fA-F]{6})`).FindAllStringSubmatch(string(css), -1) {
		colours[m[1]] = m[2]
	}
	for name, bound := range map[string]float64{"fg": 7, "muted": 7, "link": 7, "ready": 3, "applied": 3, "pending": 3, "failed": 3, "stale": 3, "unknown": 3} {
		c, ok := colours[name]
		if !ok {
			t.Errorf("style.css defines no --%s", name)
			continue
		}
		if r := contrast(c, colours["bg"]); r < bound {
			t.Errorf("--%s %s on --bg %s: contrast %.1f:1, want at least %.0f:1", name, c, colours["bg"], r, bound)
		}
	}
}

func contrast(a, b string) float64 {
	la, lb := luminance(a), luminance(b)
	return (math.Max(la, lb) + 0.05) / (math.Min(la, lb) + 0.05)
}

func luminance(hex string) float64 {
	var l float64
	for i, w := range []float64{0.2126, 0.7152, 0.0722} {
		v, _ := strconv.ParseUint(hex[1+2*i:3+2*i], 16, 8)
		c := float64(v) / 255
		if c <= 0.03928 {
			c /= 12.92
		} else {
			c = math.Pow((c+0.055)/1.055, 2.4)
		}
		l += w * c
	}
	return l
}
