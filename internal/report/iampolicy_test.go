package report

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reportjob/reportjob/internal/keys"
)

// The agency IAM policy (deploy/iam-agency-policy.json, a template with
// the placeholders BUCKET, PREFIX and AGENCY, AGENCY being the escaped
// agency id of the agency's folder) must let an agency read its own folder
// and nothing else. The test renders it and evaluates it as IAM does for
// Allow statements: an action is allowed when a statement lists it, one of
// its Resource patterns matches the ARN and every condition holds;
// patterns use IAM's wildcards (* any run of characters, "/" included,
// ? one character), case-sensitively.

const agencyPolicyFile = "../../deploy/iam-agency-policy.json"

type iamStatement struct {
	Sid       string
	Effect    string
	Action    stringList
	Resource  stringList
	Condition map[string]map[string]stringList
}

// stringList is a JSON string or list of strings, as IAM writes both.
type stringList []string

func (l *stringList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*l = stringList{one}
		return nil
	}
	return json.Unmarshal(b, (*[]string)(l))
}

type iamPolicy struct {
	Version   string
	Statement []iamStatement
}

// renderAgencyPolicy fills the template. With an empty prefix, "PREFIX/"
// goes (as the README tells an operator whose sink URL has no prefix).
func renderAgencyPolicy(t *testing.T, bucket, prefix, escapedAgency string) iamPolicy {
	t.Helper()
	b, err := os.ReadFile(agencyPolicyFile)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if prefix == "" {
		s = strings.ReplaceAll(s, "PREFIX/", "")
	}
	s = strings.NewReplacer("BUCKET", bucket, "PREFIX", prefix, "AGENCY", escapedAgency).Replace(s)
	var p iamPolicy
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		t.Fatalf("%s: %v", agencyPolicyFile, err)
	}
	return p
}

// iamMatch reports whether value matches an IAM pattern.
func iamMatch(pattern, value string) bool {
	var re strings.Builder
	re.WriteString("^")
	for _, r := range pattern {
		switch r {
		case '*':
			re.WriteString(".*")
		case '?':
			re.WriteString(".")
		default:
			re.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	re.WriteString("$")
	return regexp.MustCompile(re.String()).MatchString(value)
}

// allowed evaluates the policy for one request: action on the resource
// ARN, with the request's condition keys (a key absent from ctx fails a
// StringLike condition on it, as in IAM).
func (p iamPolicy) allowed(action, arn string, ctx map[string]string) bool {
	for _, st := range p.Statement {
		if st.Effect != "Allow" || !slices.ContainsFunc(st.Action, func(a string) bool { return iamMatch(a, action) }) ||
			!slices.ContainsFunc(st.Resource, func(r string) bool { return iamMatch(r, arn) }) {
			continue
		}
		ok := true
		for op, conds := range st.Condition {
			for key, patterns := range conds {
				v, present := ctx[key]
				switch op {
				case "StringLike":
					ok = ok && present && slices.ContainsFunc(patterns, func(p string) bool { return iamMatch(p, v) })
				default:
					ok = false // an operator this evaluator does not know: deny
				}
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func (p iamPolicy) canGet(bucket, key string) bool {
	return p.allowed("s3:GetObject", "arn:aws:s3:::"+bucket+"/"+key, nil)
}

func (p iamPolicy) canList(bucket, prefix string) bool {
	return p.allowed("s3:ListBucket", "arn:aws:s3:::"+bucket, map[string]string{"s3:prefix": prefix})
}

// TestAgencyPolicyShape: only Allow statements, read-only actions, no
// wildcard but the template's own, and AGENCY only after "agency=".
func TestAgencyPolicyShape(t *testing.T) {
	p := renderAgencyPolicy(t, "b", "p", "A")
	if p.Version != "2012-10-17" || len(p.Statement) == 0 {
		t.Fatalf("policy %+v", p)
	}
	for _, st := range p.Statement {
		if st.Effect != "Allow" {
			t.Errorf("%s: effect %s", st.Sid, st.Effect)
		}
		for _, a := range st.Action {
			if a != "s3:GetObject" && a != "s3:ListBucket" {
				t.Errorf("%s: action %s: an agency only reads and lists its folder", st.Sid, a)
			}
		}
		for _, r := range st.Resource {
			if strings.Count(r, "*")+strings.Count(r, "?") > 1 || strings.Contains(r, "*") && !strings.HasSuffix(r, "/agency=A/*") {
				t.Errorf("%s: resource %s has a wildcard outside the agency's folder", st.Sid, r)
			}
		}
	}
}

// TestAgencyPolicyIsolation renders the policy for each agency and checks
// what it allows against the keys the job writes: its own folder only,
// never another agency's (also one whose id extends it: acme vs acme2),
// nor the datasets, manifests or rejects, with or without a prefix.
func TestAgencyPolicyIsolation(t *testing.T) {
	const bucket = "rj-bucket"
	p := Period{Start: time.Date(2028, 2, 29, 0, 0, 0, 0, time.UTC), End: time.Date(2028, 3, 1, 0, 0, 0, 0, time.UTC)}
	agencies := []string{"acme", "acme2", "acme-2", "acm", "ACME", "acme/x", "..", "*", "?", "acme*", "${aws:username}", "acme%2A", "Agence Étoile"}
	for _, prefix := range []string{"billing/reports", ""} {
		join := func(k string) string {
			if prefix == "" {
				return k
			}
			return prefix + "/" + k
		}
		datasetKeys := []string{
			join(DatasetPrefix(DatasetSummary, p) + "summary-0123456789abcdef.parquet"),
			join(DatasetPrefix(DatasetTransactions, p) + "transactions-0123456789abcdef.parquet"),
			join(DatasetPrefix(DatasetAdjustments, p) + "adjustments-0123456789abcdef.parquet"),
			join(DatasetPrefix(DatasetRejects, p) + "rejects-0123456789abcdef.jsonl"),
			join(ManifestKey(p)),
			join(IntentKey(p, "run-1")),
		}
		for _, a := range agencies {
			esc := keys.EscapeAgency(a)
			if strings.ContainsAny(esc, "*?$/") {
				t.Fatalf("escaped agency %q would inject %q into the policy", a, esc)
			}
			pol := renderAgencyPolicy(t, bucket, prefix, esc)
			own := join(AgencyPrefix(a, p))
			for _, name := range []string{"summary-0123456789abcdef.csv", "transactions-0123456789abcdef.parquet"} {
				if !pol.canGet(bucket, own+name) {
					t.Errorf("prefix %q, agency %q: cannot read its own %s", prefix, a, own+name)
				}
			}
			if !pol.canList(bucket, join(EscapedAgencyPrefix(esc, p))) || !pol.canList(bucket, join("agencies/agency="+esc+"/")) {
				t.Errorf("prefix %q, agency %q: cannot list its own folder", prefix, a)
			}
			for _, other := range agencies {
				if other == a {
					continue
				}
				k := join(AgencyPrefix(other, p) + "summary-0123456789abcdef.csv")
				if pol.canGet(bucket, k) || pol.canList(bucket, join("agencies/agency="+keys.EscapeAgency(other)+"/")) {
					t.Errorf("prefix %q: agency %q can read or list %q's folder (%s)", prefix, a, other, k)
				}
			}
			for _, k := range datasetKeys {
				if pol.canGet(bucket, k) {
					t.Errorf("prefix %q: agency %q can read %s", prefix, a, k)
				}
			}
			for _, lp := range []string{"", join("agencies/"), join("agencies/agency=" + esc), join(DatasetPrefix(DatasetSummary, p))} {
				if pol.canList(bucket, lp) {
					t.Errorf("prefix %q: agency %q can list %q (other agencies' names or the datasets)", prefix, a, lp)
				}
			}
			if pol.allowed("s3:ListBucket", "arn:aws:s3:::"+bucket, nil) {
				t.Errorf("agency %q can list the bucket without a prefix", a)
			}
			if pol.allowed("s3:PutObject", "arn:aws:s3:::"+bucket+"/"+own+"x", nil) ||
				pol.allowed("s3:DeleteObject", "arn:aws:s3:::"+bucket+"/"+own+"x", nil) ||
				pol.canGet("other-bucket", own+"summary-0123456789abcdef.csv") {
				t.Errorf("agency %q can write, delete, or read another bucket", a)
			}
		}
		// A sibling prefix sharing the start of the sink's is not granted.
		if prefix != "" {
			pol := renderAgencyPolicy(t, bucket, prefix, "acme")
			if pol.canGet(bucket, prefix+"2/"+AgencyPrefix("acme", p)+"x") {
				t.Errorf("the policy for %s reaches %s2", prefix, prefix)
			}
		}
	}
}
