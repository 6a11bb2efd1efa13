package testkit

import (
	"reflect"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// SameColumns checks that every column of the parquet schema of narrow (a
// row type that reads some of a file's columns by name) is a column of
// wide's (the type that writes the file) with the same type and the same
// repetition and definition levels: a column renamed or retyped in wide
// would otherwise be read as zero values, silently. want is the number of
// columns narrow must have.
func SameColumns(t testing.TB, narrow, wide any, want int) {
	t.Helper()
	ns, ws := parquet.SchemaOf(narrow), parquet.SchemaOf(wide)
	nn, wn := reflect.TypeOf(narrow).String(), reflect.TypeOf(wide).String()
	columns := ns.Columns()
	if len(columns) != want {
		t.Fatalf("%s has %d columns, want %d", nn, len(columns), want)
	}
	for _, path := range columns {
		got, ok := ns.Lookup(path...)
		if !ok {
			t.Fatalf("%s lists column %v but has none there", nn, path)
		}
		name := strings.Join(path, ".")
		exp, ok := ws.Lookup(path...)
		if !ok {
			t.Errorf("column %s of %s is not a column of %s", name, nn, wn)
			continue
		}
		if got.Node.Type().String() != exp.Node.Type().String() ||
			got.MaxRepetitionLevel != exp.MaxRepetitionLevel || got.MaxDefinitionLevel != exp.MaxDefinitionLevel {
			t.Errorf("column %s: %s (levels %d, %d) in %s, %s (levels %d, %d) in %s", name,
				got.Node.Type(), got.MaxRepetitionLevel, got.MaxDefinitionLevel, nn,
				exp.Node.Type(), exp.MaxRepetitionLevel, exp.MaxDefinitionLevel, wn)
		}
	}
}
