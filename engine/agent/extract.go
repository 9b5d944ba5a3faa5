package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ExtractJSON finds the structured part of a model's answer: the last fenced
// code block tagged json (```json ... ```), else the last untagged fenced
// block, else the whole answer when it is a bare JSON object or array. The
// answer itself is never changed. An unclosed final fence runs to the end of
// the answer (a model that was cut off).
func ExtractJSON(answer string) (any, error) {
	blocks := fencedBlocks(answer)
	pick := -1
	for i := len(blocks) - 1; i >= 0; i-- {
		if strings.EqualFold(blocks[i].lang, "json") {
			pick = i
			break
		}
	}
	if pick < 0 {
		for i := len(blocks) - 1; i >= 0; i-- {
			if blocks[i].lang == "" {
				pick = i
				break
			}
		}
	}
	if pick >= 0 {
		v, err := decodeJSON(blocks[pick].body)
		if err != nil {
			return nil, fmt.Errorf("the last ```json block is not valid JSON: %v", err)
		}
		return v, nil
	}
	t := strings.TrimSpace(answer)
	if strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		v, err := decodeJSON(t)
		if err != nil {
			return nil, fmt.Errorf("the answer looks like bare JSON but does not parse: %v", err)
		}
		return v, nil
	}
	return nil, errors.New("the answer has no ```json block and is not bare JSON")
}

type fence struct {
	lang string
	body string
}

// fencedBlocks returns the fenced code blocks (``` or ~~~) in order.
func fencedBlocks(s string) []fence {
	var out []fence
	lines := strings.Split(s, "\n")
	for i := 0; i < len(lines); i++ {
		marker, info, ok := openFence(lines[i])
		if !ok {
			continue
		}
		var body []string
		j := i + 1
		for ; j < len(lines); j++ {
			if closesFence(lines[j], marker) {
				break
			}
			body = append(body, lines[j])
		}
		lang := info
		if k := strings.IndexAny(lang, " \t{"); k >= 0 {
			lang = lang[:k]
		}
		out = append(out, fence{lang: lang, body: strings.Join(body, "\n")})
		i = j
	}
	return out
}

func openFence(line string) (marker, info string, ok bool) {
	t := strings.TrimSpace(line)
	for _, ch := range []string{"`", "~"} {
		n := 0
		for n < len(t) && t[n:n+1] == ch {
			n++
		}
		if n >= 3 {
			info = strings.TrimSpace(t[n:])
			if ch == "`" && strings.Contains(info, "`") {
				return "", "", false // inline code, not a fence
			}
			return t[:n], info, true
		}
	}
	return "", "", false
}

func closesFence(line, marker string) bool {
	t := strings.TrimSpace(line)
	if !strings.HasPrefix(t, marker) {
		return false
	}
	return strings.Trim(t, marker[:1]) == ""
}

// decodeJSON decodes exactly one JSON value.
func decodeJSON(s string) (any, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("it is empty")
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if strings.TrimSpace(s[dec.InputOffset():]) != "" {
		return nil, errors.New("text follows the JSON value")
	}
	return v, nil
}
