package config

import (
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/robfig/cron/v3"

	"github.com/reportjob/reportjob/internal/pricing"
)

var (
	jobNameRE   = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)
	tableNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]{3,255}$`) // DynamoDB table name rule
)

func (d *decoder) decode() *Config {
	var c Config
	c.JobName = d.str("job_name")
	if !jobNameRE.MatchString(c.JobName) {
		d.fail("job_name", c.JobName, "must be 1 to 64 of A-Z a-z 0-9 . _ -")
	}

	c.Store.Backend = d.oneOf("store.backend", "embedded", "dynamodb")
	switch c.Store.Backend {
	case "embedded":
		d.nonEmpty("store.embedded.path", 4096)
	case "dynamodb":
		for _, k := range []string{"store.dynamodb.table", "store.dynamodb.state_table"} {
			if s := d.str(k); !tableNameRE.MatchString(s) {
				d.fail(k, s, "must be a DynamoDB table name: 3 to 255 of A-Z a-z 0-9 . _ -")
			}
		}
	}
	c.Store.Embedded.Path = d.str("store.embedded.path")
	c.Store.DynamoDB.Table = d.str("store.dynamodb.table")
	c.Store.DynamoDB.StateTable = d.str("store.dynamodb.state_table")
	c.Store.DynamoDB.Region = d.str("store.dynamodb.region") // "" = the SDK's default chain
	c.Store.DynamoDB.Endpoint = d.httpURL("store.dynamodb.endpoint")

	c.Keys.PartitionAttr = d.nonEmpty("keys.partition_attr", 255)
	c.Keys.SortAttr = d.nonEmpty("keys.sort_attr", 255)
	if c.Keys.SortAttr != "" && c.Keys.SortAttr == c.Keys.PartitionAttr {
		d.fail("keys.sort_attr", c.Keys.SortAttr, "must differ from keys.partition_attr")
	}
	c.Keys.Shards = d.int("keys.shards", 1, maxShards)

	c.Sink.URL = d.str("sink.url")
	if scheme, rest, ok := strings.Cut(c.Sink.URL, "://"); !ok || (scheme != "file" && scheme != "s3") {
		d.fail("sink.url", c.Sink.URL, "must be file://DIR or s3://BUCKET/PREFIX")
	} else if reason := parseSinkURL(&c, scheme, rest); reason != "" {
		d.fail("sink.url", c.Sink.URL, reason)
	}
	c.Sink.S3.Region = d.str("sink.s3.region")
	c.Sink.S3.Endpoint = d.httpURL("sink.s3.endpoint")
	c.Sink.S3.PathStyle = d.bool("sink.s3.path_style")
	c.Sink.S3.SSE = d.oneOf("sink.s3.sse", "", "AES256", "aws:kms")
	c.Sink.S3.KMSKeyID = d.str("sink.s3.kms_key_id")
	if c.Sink.S3.KMSKeyID != "" && c.Sink.S3.SSE != "aws:kms" {
		d.fail("sink.s3.kms_key_id", c.Sink.S3.KMSKeyID, `only allowed with sink.s3.sse "aws:kms"`)
	}

	d.decodeReport(&c)
	d.decodeStatements(&c)
	d.decodeDelivery(&c)

	c.Schedule.Cron = d.str("schedule.cron")
	if up := strings.ToUpper(c.Schedule.Cron); strings.HasPrefix(up, "TZ=") || strings.HasPrefix(up, "CRON_TZ=") {
		d.fail("schedule.cron", c.Schedule.Cron, "set the zone in schedule.timezone, not in the cron spec")
	} else if _, err := cron.ParseStandard(c.Schedule.Cron); err != nil {
		d.fail("schedule.cron", c.Schedule.Cron, "not a cron spec (5 fields, or @hourly, @every 15m, ...): "+err.Error())
	}
	c.Schedule.Timezone = orDefault(d.str("schedule.timezone"), "UTC")
	if loc, err := time.LoadLocation(c.Schedule.Timezone); err != nil || c.Schedule.Timezone == "Local" {
		d.fail("schedule.timezone", c.Schedule.Timezone, "must be an IANA time zone name such as UTC or Europe/Paris")
	} else {
		c.Schedule.Location = loc
	}

	if d.defaultRates != nil && d.src[defaultBPSKey] != EnvName(defaultBPSKey) {
		c.Commission.Default = d.defaultRates
	} else {
		bps, _ := d.bps(defaultBPSKey, d.str(defaultBPSKey))
		c.Commission.Default = pricing.Schedule{{BPS: int32(bps)}}
	}
	c.Commission.Agencies = d.agencies
	c.Metrics.PushgatewayURL = d.httpURL("metrics.pushgateway_url")
	c.Log.Level = d.oneOf("log.level", "debug", "info", "warn", "error")
	c.Log.Format = d.oneOf("log.format", "json", "text")
	c.Log.FormatSet = d.src["log.format"] != ""
	return &c
}

// parseSinkURL fills c.Sink.Dir or Bucket/Prefix and returns "" or what is wrong.
func parseSinkURL(c *Config, scheme, rest string) string {
	if strings.ContainsFunc(rest, unicode.IsControl) {
		return "contains a control character"
	}
	if scheme == "file" {
		if rest == "" {
			return "file:// needs a directory, such as file://./reports"
		}
		c.Sink.Dir = rest
		return ""
	}
	bucket, prefix, _ := strings.Cut(rest, "/")
	if reason := bucketProblem(bucket); reason != "" {
		return "bad bucket name " + strconv.Quote(bucket) + ": " + reason
	}
	prefix = strings.TrimSuffix(prefix, "/")
	if prefix != "" {
		for seg := range strings.SplitSeq(prefix, "/") {
			if seg == "" || seg == "." || seg == ".." {
				return "prefix has an empty, . or .. segment"
			}
		}
	}
	c.Sink.Bucket, c.Sink.Prefix = bucket, prefix
	return ""
}

var bucketRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// bucketProblem applies the S3 general purpose bucket naming rules.
func bucketProblem(b string) string {
	switch {
	case !bucketRE.MatchString(b):
		return "3 to 63 of a-z 0-9 . -, starting and ending with a letter or digit"
	case strings.Contains(b, ".."):
		return "two adjacent dots"
	case net.ParseIP(b) != nil:
		return "formatted as an IP address"
	}
	for _, p := range []string{"xn--", "sthree-", "amzn-s3-demo-"} {
		if strings.HasPrefix(b, p) {
			return "reserved prefix " + p
		}
	}
	for _, s := range []string{"-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"} {
		if strings.HasSuffix(b, s) {
			return "reserved suffix " + s
		}
	}
	return ""
}
