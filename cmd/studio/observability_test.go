package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeRefusesBadPricesAndExporters: a price table with a mistake, or
// an OTEL_* setting the studio cannot honour, stops the start-up with the
// reason, before anything listens.
func TestServeRefusesBadPricesAndExporters(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "prices.yaml")
	os.WriteFile(bad, []byte("gpt-4o: {input: 2.5}\n"), 0o644)
	for _, c := range []struct {
		args []string
		env  [2]string
		want string
	}{
		{[]string{"--prices", bad}, [2]string{}, `--prices: prices ` + bad + `: model "gpt-4o": output is missing`},
		{[]string{"--prices", filepath.Join(dir, "none.yaml")}, [2]string{}, "--prices: prices: open"},
		{nil, [2]string{"OTEL_TRACES_EXPORTER", "zipkin"}, "tracing: OTEL_TRACES_EXPORTER=zipkin: the studio exports traces with otlp only"},
		{nil, [2]string{"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"}, "http/protobuf only"},
	} {
		if c.env[0] != "" {
			t.Setenv(c.env[0], c.env[1])
			if c.env[0] == "OTEL_EXPORTER_OTLP_PROTOCOL" {
				t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317")
			}
		}
		var out, errb bytes.Buffer
		args := append([]string{"--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "x.db")}, c.args...)
		code := cmdServe(context.Background(), args, &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v %v: exit %d, %q; want %q", c.args, c.env, code, errb.String(), c.want)
		}
		if c.env[0] != "" {
			os.Unsetenv(c.env[0])
			os.Unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT")
		}
	}
}
