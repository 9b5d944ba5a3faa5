package enginetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// A2ESDK is what the A2E Python SDK sends and accepts, recorded in
// engine/testdata/a2e-sdk (see its README): the messages its client writes
// and the JSON Schemas of its message models. Tests of every A2E door send
// the recorded messages and check each answer against the schema of its type.
type A2ESDK struct {
	dir     string
	schemas map[string]*jsonschema.Schema // by message type
}

// a2eSchemaOf maps a message type to the SDK model that decodes it.
var a2eSchemaOf = map[string]string{
	"handshake/req":  "HandshakeRequest",
	"handshake/resp": "HandshakeResponse",
	"ping":           "Ping",
	"pong":           "Pong",
	"shutdown":       "Shutdown",
	"error":          "A2EError",
	"invoke/event":   "A2EEvent",
	"chain/req":      "ChainRequest",
	"chain/event":    "ChainEvent",
	"chain/resp":     "ChainResponse",
}

// LoadA2ESDK compiles the recorded schemas.
func LoadA2ESDK() (*A2ESDK, error) {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "testdata", "a2e-sdk")
	k := &A2ESDK{dir: dir, schemas: map[string]*jsonschema.Schema{}}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	for typ, model := range a2eSchemaOf {
		sch, err := c.Compile(filepath.Join(dir, "schemas", model+".schema.json"))
		if err != nil {
			return nil, fmt.Errorf("compile the SDK's %s schema: %w", model, err)
		}
		k.schemas[typ] = sch
	}
	return k, nil
}

// Message returns a recorded message (messages/<name>.json) as one line of
// JSON, with each "<...>" placeholder field replaced from set.
func (k *A2ESDK) Message(name string, set map[string]any) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(k.dir, "messages", name+".json"))
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for key, v := range set {
		m[key] = v
	}
	return json.Marshal(m)
}

// Check validates a message the host sent against the SDK's schema of its
// type; a message without a type is refused, as the SDK's client does
// ("Missing 'type' field").
func (k *A2ESDK) Check(msg []byte) error {
	var env struct {
		Type *string `json:"type"`
	}
	if err := json.Unmarshal(msg, &env); err != nil {
		return fmt.Errorf("not a JSON object: %w: %s", err, msg)
	}
	if env.Type == nil {
		return fmt.Errorf("missing 'type' field: %s", msg)
	}
	sch, ok := k.schemas[*env.Type]
	if !ok {
		return fmt.Errorf("type %q is no message the SDK decodes: %s", *env.Type, msg)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(msg))
	if err != nil {
		return err
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Errorf("%s does not validate against the SDK's schema: %v\n%s", *env.Type, strings.TrimSpace(err.Error()), msg)
	}
	return nil
}
