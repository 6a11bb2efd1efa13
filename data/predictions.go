package data

import (
	"encoding/json"
	"errors"
)

// Prediction is one answer of a QA system to a question, as `distill score`
// reads it: {"id": ..., "prediction": ...} (the id a JSON string or number).
type Prediction struct {
	ID         string `json:"id"`
	Prediction string `json:"prediction"`
}

// PredictionReader streams the predictions of a JSONL file or JSON list
// (gzip-compressed when the name ends in ".gz"). Its contract is
// QuestionReader's: a *RecordError is one bad record and the reader goes
// on; any other error is fatal.
type PredictionReader struct {
	path   string
	stream *recordStream
}

// OpenPredictions opens a predictions file.
func OpenPredictions(path string) (*PredictionReader, error) {
	s, err := openStream(path, false)
	if err != nil {
		return nil, err
	}
	return &PredictionReader{path: path, stream: s}, nil
}

// predictionRecord has pointers so that an absent field is told apart from
// an empty one.
type predictionRecord struct {
	ID         json.RawMessage `json:"id"`
	Prediction *string         `json:"prediction"`
}

// Next returns the next prediction, io.EOF after the last one.
func (r *PredictionReader) Next() (Prediction, error) {
	rec, err := r.stream.next()
	if err != nil {
		return Prediction{}, err
	}
	v, id, err := decodeWithID(r.path, rec, "predictions", "id", func(v *predictionRecord) json.RawMessage { return v.ID })
	switch {
	case err != nil:
		return Prediction{}, err
	case id == "":
		return Prediction{}, missing(r.path, rec, "id")
	case v.Prediction == nil:
		return Prediction{}, badField(r.path, rec, "prediction", errors.New("absent or null: want a string (empty for no answer)"))
	}
	return Prediction{ID: id, Prediction: *v.Prediction}, nil
}

// Close releases the file. It is idempotent.
func (r *PredictionReader) Close() error { return r.stream.close() }
