package server

// The Count-Min Sketch and Top-K commands' MULTI cases (see multiCases).
func init() {
	for name, cases := range map[string][][]string{
		"cms.initbydim":  {{"CMS.INITBYDIM", "mnew", "10", "3"}},
		"cms.initbyprob": {{"CMS.INITBYPROB", "mnew2", "0.01", "0.01"}},
		"cms.incrby":     {{"CMS.INCRBY", "bk", "a", "1"}},
		"cms.query":      {{"CMS.QUERY", "bk", "a"}},
		"cms.merge":      {{"CMS.MERGE", "bk", "1", "bk"}},
		"cms.info":       {{"CMS.INFO", "bk"}},
		"topk.reserve":   {{"TOPK.RESERVE", "tnew", "3"}},
		"topk.add":       {{"TOPK.ADD", "bk", "a"}},
		"topk.incrby":    {{"TOPK.INCRBY", "bk", "a", "2"}},
		"topk.query":     {{"TOPK.QUERY", "bk", "a"}},
		"topk.count":     {{"TOPK.COUNT", "bk", "a"}},
		"topk.list":      {{"TOPK.LIST", "bk"}},
		"topk.info":      {{"TOPK.INFO", "bk"}},
	} {
		multiCases[name] = cases
	}
}
