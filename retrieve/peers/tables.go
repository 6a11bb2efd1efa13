package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// tables writes the rows as Markdown: the BM25 rows by corpus, the dense
// rows, and each engine's settings.
func tables(rows []Row) string {
	var b strings.Builder
	var sparse, dense []Row
	for _, r := range rows {
		if r.Precision != "" || strings.HasPrefix(r.Corpus, "vectors-") {
			dense = append(dense, r)
		} else {
			sparse = append(sparse, r)
		}
	}
	if len(sparse) > 0 {
		b.WriteString("| corpus | passages | queries | engine | build s | index MB | peak RSS MB: build / search | queries/s, one at a time | queries/s, batch | p50 / p99 ms | overlap@10 vs Pyserini: exact / ties apart |\n")
		b.WriteString("| --- | ---: | ---: | --- | ---: | ---: | --- | ---: | ---: | --- | --- |\n")
		for _, r := range sparse {
			if r.Error != "" {
				fmt.Fprintf(&b, "| %s | %d | %d | %s | failed: %s | | | | | | |\n", r.Corpus, r.Passages, r.Queries, r.Engine, cell(r.Error))
				continue
			}
			agree := ""
			if r.Overlap10 != nil {
				agree = ratio(r.Overlap10) + " / " + ratio(r.Overlap10Ties)
			}
			fmt.Fprintf(&b, "| %s | %d | %d | %s | %.1f | %.0f | %.0f / %.0f | %.0f | %.0f | %.3f / %.3f | %s |\n",
				r.Corpus, r.Passages, r.Queries, r.Engine, r.BuildS, r.IndexMB, r.PeakRSSMB, r.SearchRSSMB,
				r.QPSSingle, r.QPSBatch, r.P50MS, r.P99MS, agree)
		}
		b.WriteString("\n")
	}
	if len(dense) > 0 {
		b.WriteString("| vectors | engine | precision | search | nprobe | recall@10 | queries/s, one at a time | queries/s, batch | p50 / p99 ms | build s | index MB |\n")
		b.WriteString("| --- | --- | --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: |\n")
		for _, r := range dense {
			if r.Error != "" {
				fmt.Fprintf(&b, "| %s | %s | | failed: %s | | | | | | | |\n", r.Corpus, r.Engine, cell(r.Error))
				continue
			}
			search, nprobe := "exact", ""
			if r.NProbe > 0 {
				search, nprobe = fmt.Sprintf("IVF, %v lists", r.Settings["nlist"]), fmt.Sprint(r.NProbe)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %.1f | %.1f | %.2f / %.2f | %.1f | %.0f |\n",
				r.Corpus, r.Engine, r.Precision, search, nprobe, ratio(r.Recall10), r.QPSSingle, r.QPSBatch, r.P50MS, r.P99MS, r.BuildS, r.IndexMB)
		}
		b.WriteString("\n")
	}
	b.WriteString(settingsList(rows))
	return b.String()
}

// settingsList names each engine's settings once.
func settingsList(rows []Row) string {
	var b strings.Builder
	var seen []string
	for _, r := range rows {
		if r.Settings == nil || slices.Contains(seen, r.Engine) {
			continue
		}
		seen = append(seen, r.Engine)
		keys := make([]string, 0, len(r.Settings))
		for k := range r.Settings {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			v, _ := json.Marshal(r.Settings[k])
			parts[i] = k + " " + strings.Trim(string(v), `"`)
		}
		fmt.Fprintf(&b, "- %s: %s\n", r.Engine, strings.Join(parts, "; "))
	}
	return b.String()
}

func ratio(p *float64) string {
	if p == nil {
		return ""
	}
	return fmt.Sprintf("%.4f", *p)
}

func cell(s string) string {
	s = strings.ReplaceAll(s, "|", "/")
	if len(s) > 160 {
		s = s[:160] + "..."
	}
	return s
}
