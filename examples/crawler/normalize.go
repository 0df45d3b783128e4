package main

import (
	"fmt"
	"net/url"
	"path"
	"sort"
	"strings"
)

// normalize returns the canonical form of a link found on page base, so that
// spellings of one page compare equal: scheme and host lower-cased, default
// ports dropped, dot segments resolved, the trailing slash of a non-root path
// dropped, the fragment dropped and the query parameters sorted. ok is false
// for links a crawler does not follow (mailto:, javascript:, other schemes).
func normalize(base *url.URL, href string) (string, bool) {
	u, err := base.Parse(strings.TrimSpace(href))
	if err != nil {
		return "", false
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return "", false
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "80" && u.Scheme == "http" || port == "443" && u.Scheme == "https" {
		port = ""
	}
	if port != "" {
		host = host + ":" + port
	}
	if strings.Contains(host, ":") && port == "" && !strings.HasPrefix(host, "[") {
		host = "[" + host + "]" // IPv6 literal without a port
	}
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	p = path.Clean(p)
	if p == "." {
		p = "/"
	}
	q := u.Query()
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var query strings.Builder
	for _, k := range keys {
		vs := q[k]
		sort.Strings(vs)
		for _, v := range vs {
			if query.Len() > 0 {
				query.WriteByte('&')
			}
			query.WriteString(url.QueryEscape(k))
			query.WriteByte('=')
			query.WriteString(url.QueryEscape(v))
		}
	}
	s := fmt.Sprintf("%s://%s%s", u.Scheme, host, p)
	if query.Len() > 0 {
		s += "?" + query.String()
	}
	return s, true
}
