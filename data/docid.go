package data

import (
	"crypto/sha1"
	"encoding/hex"
)

// DocID returns the id used for passages that come from a dataset's context
// paragraphs: the hex sha1 of title + "\n" + text. It is the convention of the
// 2WikiMultiHopQA corpora used by the method's reference code, so ids match
// across tools.
func DocID(title, text string) string {
	h := sha1.New()
	h.Write([]byte(title))
	h.Write([]byte{'\n'})
	h.Write([]byte(text))
	return hex.EncodeToString(h.Sum(nil))
}
