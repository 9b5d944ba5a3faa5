package redact

import "testing"

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://admin:pass@host/v1?api_key=K":                  "http://***@host/v1?api_key=***",
		"https://user@models.example:8443/v1/chat/completions": "https://***@models.example:8443/v1/chat/completions",
		"http://h/p?a=1&b=2&a=3":                               "http://h/p?a=***&b=***&a=***",
		"http://h/p?SECRET":                                    "http://h/p?***",
		"http://h/p?k=":                                        "http://h/p?k=***",
		"http://h/p#token=abc":                                 "http://h/p#***",
		"http://localhost:11434/v1":                            "http://localhost:11434/v1",
		"http://127.0.0.1:8080/a%20b/c":                        "http://127.0.0.1:8080/a%20b/c",
		"http://[::1]:9/x":                                     "http://[::1]:9/x",
		"http://:pass@h/":                                      "http://***@h/",
		"mailto:someone@example.com":                           "mailto:***",
		"http://h\x00/?k=v":                                    "<URL hidden: ***>",
		"/relative/path?token=t":                               "/relative/path?token=***",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}
