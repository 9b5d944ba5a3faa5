package sqlstore

import (
	"strings"
	"testing"
	"testing/fstest"
)

// Migrations are read in number order, whatever their names say; a name
// without a number, or a gap, is refused at once.
func TestMigrationsNumbered(t *testing.T) {
	ms := Migrations(fstest.MapFS{
		"m/0002_add_b.sql":     {Data: []byte("B")},
		"m/0001_create_a.sql":  {Data: []byte("A")},
		"m/README":             {Data: []byte("not a migration")},
		"m/0003_drop_c_fk.sql": {Data: []byte("C")},
	}, "m")
	var got []string
	for i, m := range ms {
		if m.Version != i+1 {
			t.Fatalf("migration %d has version %d", i, m.Version)
		}
		got = append(got, m.Name+"="+m.SQL)
	}
	if want := "0001_create_a.sql=A 0002_add_b.sql=B 0003_drop_c_fk.sql=C"; strings.Join(got, " ") != want {
		t.Fatalf("migrations %v, want %s", got, want)
	}
	for name, fsys := range map[string]fstest.MapFS{
		"gap":       {"m/0001_a.sql": {}, "m/0003_c.sql": {}},
		"no number": {"m/0001_a.sql": {}, "m/add_b.sql": {}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			Migrations(fsys, "m")
		}()
	}
}
