// Package attr builds and reads the DynamoDB attribute values that
// reportjob's stores write: numbers, strings, bytes, times as Unix
// milliseconds, and the state table's key. It is shared by the store
// (package dynamodb) and its job state and dedupe index subpackages, so
// that they write one format.
package attr

import (
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Job is the state table's key attribute (S): a job name for the job
// state, or a key of the dedupe index.
const Job = "job"

// JobKey is the state table key of the item named job.
func JobKey(job string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{Job: S(job)}
}

// N is the number n.
func N(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// S is the string s.
func S(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

// B is the binary b.
func B(b []byte) types.AttributeValue { return &types.AttributeValueMemberB{Value: b} }

// Millis is t as a number of Unix milliseconds; the zero time has no such
// value and is never stored.
func Millis(t time.Time) types.AttributeValue { return N(t.UnixMilli()) }

// FromMillis is the UTC time n Unix milliseconds.
func FromMillis(n int64) time.Time { return time.UnixMilli(n).UTC() }

// FormatTime formats t for error messages: RFC 3339 in UTC, "none" for
// the zero time.
func FormatTime(t time.Time) string {
	if t.IsZero() {
		return "none"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// TypeName names v's DynamoDB type ("S", "N", "BOOL", ...).
func TypeName(v types.AttributeValue) string {
	switch v.(type) {
	case *types.AttributeValueMemberS:
		return "S"
	case *types.AttributeValueMemberN:
		return "N"
	case *types.AttributeValueMemberB:
		return "B"
	case *types.AttributeValueMemberBOOL:
		return "BOOL"
	case *types.AttributeValueMemberNULL:
		return "NULL"
	case *types.AttributeValueMemberM:
		return "M"
	case *types.AttributeValueMemberL:
		return "L"
	case *types.AttributeValueMemberSS:
		return "SS"
	case *types.AttributeValueMemberNS:
		return "NS"
	case *types.AttributeValueMemberBS:
		return "BS"
	default:
		return fmt.Sprintf("%T", v)
	}
}
