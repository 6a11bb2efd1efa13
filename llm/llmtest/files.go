package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
)

// The files the Files endpoints hold (see batch.go for the endpoints):
// uploads, and the output and error files of batches.

type file struct {
	id, name, purpose string
	created           int64
	data              []byte // never changed once stored
}

func (f *file) object() []byte {
	b, _ := json.Marshal(map[string]any{
		"id":             f.id,
		"object":         "file",
		"bytes":          len(f.data),
		"created_at":     f.created,
		"filename":       f.name,
		"purpose":        f.purpose,
		"status":         "processed",
		"status_details": nil,
	})
	return b
}

// File returns the content of a file the server holds (uploaded, or
// written as a batch's output or error file).
func (s *Server) File(id string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.files[id]
	if !ok {
		return nil, false
	}
	return f.data, true
}

// purposes are the file purposes the server takes.
var purposes = map[string]bool{"batch": true, "fine-tune": true, "assistants": true, "vision": true, "user_data": true, "evals": true}

func parseUpload(contentType string, body []byte) (*file, *apiError) {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return nil, badRequest("The request must be multipart/form-data with a boundary.", "")
	}
	f := &file{}
	var haveFile bool
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, badRequest("Could not parse the multipart body: "+err.Error(), "")
		}
		data, err := io.ReadAll(p)
		if err != nil {
			return nil, badRequest("Could not parse the multipart body: "+err.Error(), "")
		}
		switch p.FormName() {
		case "purpose":
			f.purpose = string(data)
		case "file":
			f.name, f.data, haveFile = p.FileName(), data, true
		}
	}
	switch {
	case f.purpose == "":
		return nil, badRequest("Missing required parameter: 'purpose'.", "purpose")
	case !purposes[f.purpose]:
		return nil, badRequest("Invalid value for 'purpose': '"+f.purpose+"'.", "purpose")
	case !haveFile:
		return nil, badRequest("Missing required parameter: 'file'.", "file")
	}
	if f.name == "" {
		f.name = "upload"
	}
	return f, nil
}

// storeFile gives f an id and keeps it; s.mu is held.
func (s *Server) storeFile(f *file) string {
	f.id = fmt.Sprintf("file-llmtest%06d", len(s.files)+1)
	s.files[f.id] = f
	return f.id
}
