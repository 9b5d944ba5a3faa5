package sqlstore

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migration is one schema change of a backend: the file NNNN_what.sql of
// its migrations folder. A database records the versions applied
// (schema_version.version), never the file names, so a file may be renamed
// to say better what it does without any database noticing.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations reads the .sql files in dir of fsys, numbered 1..n in order.
// A backend embeds its files, so a bad name or gap panics at start-up
// (and in every test).
func Migrations(fsys fs.FS, dir string) []Migration {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		panic("store: embedded migrations: " + err.Error())
	}
	var out []Migration
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".sql") {
			continue
		}
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			panic("store: migration file name must be NNNN_name.sql: " + name)
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, name))
		if err != nil {
			panic("store: embedded migration " + name + ": " + err.Error())
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		if m.Version != i+1 {
			panic(fmt.Sprintf("store: migrations are not numbered 1..n: %s is number %d", m.Name, i+1))
		}
	}
	return out
}

// SchemaVersionError: the database was written by a newer studio.
type SchemaVersionError struct {
	Have, Known int
}

func (e *SchemaVersionError) Error() string {
	return fmt.Sprintf("database schema version %d is newer than this studio (knows up to %d); upgrade the studio", e.Have, e.Known)
}

// CreateSchemaVersion is the table that records the migrations applied,
// by version.
const CreateSchemaVersion = `CREATE TABLE IF NOT EXISTS schema_version (
    version    INTEGER NOT NULL PRIMARY KEY,
    applied_at BIGINT  NOT NULL
)`
