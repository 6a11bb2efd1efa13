// Package metafile reads and writes meta.json, the description that every
// on-disk index (BM25, dense) keeps in its directory. Its "format" member
// names the kind of index, which is how a directory is told apart from
// another kind's.
package metafile

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/distill-rag/distill/data"
	"github.com/distill-rag/distill/retrieve/internal/record"
)

// Name is the description's name inside an index directory.
const Name = "meta.json"

// Write writes v, indented, as dir's meta.json, atomically.
func Write(dir string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return data.WriteFileAtomic(filepath.Join(dir, Name), append(b, '\n'))
}

// Read decodes dir's meta.json into v. A file that is not JSON gives
// record.ErrCorrupt.
func Read(dir string, v any) error {
	b, err := os.ReadFile(filepath.Join(dir, Name))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w: %v", Name, record.ErrCorrupt, err)
	}
	return nil
}

// Format returns the "format" member of dir's meta.json: "" when there is
// none, or no readable meta.json.
func Format(dir string) string {
	var m struct {
		Format string `json:"format"`
	}
	if Read(dir, &m) != nil {
		return ""
	}
	return m.Format
}
