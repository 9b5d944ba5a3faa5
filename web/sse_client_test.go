package web

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
)

// sseFrame is one server-sent event (or comment) as a client sees it.
type sseFrame struct {
	ID, Event, Data string
	Comment         bool
}

// sseReader parses a text/event-stream.
type sseReader struct {
	r *bufio.Reader
}

func newSSEReader(r io.Reader) *sseReader { return &sseReader{r: bufio.NewReaderSize(r, 64<<10)} }

// next returns the next event or comment; io.EOF when the stream ends.
func (s *sseReader) next() (sseFrame, error) {
	var f sseFrame
	var data []string
	have := false
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if err == io.EOF && have {
				return f, io.ErrUnexpectedEOF
			}
			return f, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if !have {
				continue
			}
			f.Data = strings.Join(data, "\n")
			return f, nil
		}
		if strings.HasPrefix(line, ":") {
			if !have {
				return sseFrame{Comment: true, Data: strings.TrimSpace(line[1:])}, nil
			}
			continue
		}
		have = true
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			f.ID = value
		case "event":
			f.Event = value
		case "data":
			data = append(data, value)
		}
	}
}

// openSSE connects to an event stream; headers are name/value pairs.
func openSSE(ctx context.Context, client *http.Client, url string, headers ...string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return client.Do(req)
}
