package data

// Question is one question of a QA dataset with everything known about its
// gold answer and gold evidence ("retrieval truth").
type Question struct {
	// ID is the dataset's own id for the question.
	ID string `parquet:"id" json:"id"`
	// Text is the question itself.
	Text string `parquet:"question" json:"question"`
	// Answers holds every accepted gold answer; the first is the canonical one
	// and the rest are aliases.
	Answers []string `parquet:"answers,list" json:"answers"`
	// Type is the dataset's question type (bridge, comparison, compositional,
	// 2hop, ...) when it gives one.
	Type string `parquet:"type" json:"type,omitempty"`
	// GoldTitles are the titles of the supporting documents, in the
	// dataset's order, without repeats.
	GoldTitles []string `parquet:"gold_titles,list" json:"gold_titles"`
	// GoldDocIDs are the doc ids of the supporting paragraphs when the source
	// identifies paragraphs (HotpotQA, 2Wiki and MuSiQue context paragraphs);
	// empty when only titles are known.
	GoldDocIDs []string `parquet:"gold_doc_ids,list" json:"gold_doc_ids,omitempty"`
	// SupportingFacts are sentence-level gold evidence when the dataset has it.
	SupportingFacts []SupportingFact `parquet:"supporting_facts,list" json:"supporting_facts,omitempty"`
	// Dataset names the source dataset ("hotpotqa", "2wikimultihopqa",
	// "musique", "sample", or the name given at import).
	Dataset string `parquet:"dataset" json:"dataset"`
}

// SupportingFact is one gold evidence sentence: the title of its document and
// the sentence's 0-based index within that document.
type SupportingFact struct {
	Title    string `parquet:"title" json:"title"`
	Sentence int32  `parquet:"sentence" json:"sentence"`
}

// Passage is one retrievable document of a corpus.
type Passage struct {
	// ID is unique within its corpus. Passages built from dataset context
	// paragraphs use the hex sha1 of Title + "\n" + Text (see DocID).
	ID    string `parquet:"id" json:"id"`
	Title string `parquet:"title" json:"title"`
	Text  string `parquet:"text" json:"text"`
	// Sentences holds the source's own sentence split when it gives one
	// (HotpotQA and 2Wiki paragraphs); empty means "split Text yourself".
	Sentences []string `parquet:"sentences,list" json:"sentences,omitempty"`
}

// SentenceRef says where a piece of evidence came from: the document and the
// 0-based index of the sentence within it.
type SentenceRef struct {
	DocID string `parquet:"doc_id" json:"doc_id"`
	Title string `parquet:"title" json:"title"`
	Index int32  `parquet:"index" json:"index"`
}

// The files of a dataset directory (what dataset.Import writes, what
// rollout and index read).
const (
	QuestionsFile = "questions.parquet"
	CorpusFile    = "corpus.parquet"
)
