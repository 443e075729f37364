package ysb

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// CampaignsHeader is the exact first line of a campaigns CSV file.
const CampaignsHeader = "ad_id,campaign_id"

var errNoCampaigns = errors.New("ysb: nil campaigns table")

// Campaigns is the static join table: ad AdIDs[i] belongs to campaign CampaignIDs[i].
// Several ads share a campaign; an ad id appears at most once.
type Campaigns struct {
	AdIDs       []UUID
	CampaignIDs []UUID
}

// check verifies the table is well formed: equal lengths and no duplicate ad.
// It returns the ad-to-campaign map so callers that need one build it only once.
func (c *Campaigns) check() (map[UUID]UUID, error) {
	if c == nil {
		return nil, errNoCampaigns
	}
	if len(c.AdIDs) != len(c.CampaignIDs) {
		return nil, fmt.Errorf("ysb: campaigns table has %d ad ids but %d campaign ids", len(c.AdIDs), len(c.CampaignIDs))
	}
	m := make(map[UUID]UUID, len(c.AdIDs))
	first := make(map[UUID]int, len(c.AdIDs))
	for i, ad := range c.AdIDs {
		if j, dup := first[ad]; dup {
			return nil, fmt.Errorf("ysb: campaigns table: duplicate ad_id %s at entries %d and %d", ad, j, i)
		}
		first[ad] = i
		m[ad] = c.CampaignIDs[i]
	}
	return m, nil
}

// LoadCampaigns reads a campaigns CSV file; see ReadCampaigns.
func LoadCampaigns(path string) (*Campaigns, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load campaigns: %w", err) // *PathError already names path
	}
	defer f.Close()
	return ReadCampaigns(f, path)
}

// ReadCampaigns parses a campaigns CSV: the header "ad_id,campaign_id" then one
// "ad_id,campaign_id" pair of canonical UUIDs per line. A trailing \r on any
// line (files written on Windows) and empty lines at the end are tolerated; an
// empty line followed by data is not. A header-only file is a valid empty
// table. Every error names name and the 1-based line.
func ReadCampaigns(r io.Reader, name string) (*Campaigns, error) {
	lr := newLineReader(r, name)
	if err := lr.header(CampaignsHeader); err != nil {
		return nil, err
	}
	c := &Campaigns{}
	firstLine := make(map[UUID]int)
	for {
		line, ok, err := lr.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return c, nil
		}
		adText, campText, found := strings.Cut(line, ",")
		if !found || strings.Contains(campText, ",") {
			return nil, lr.errorf("want 2 fields \"ad_id,campaign_id\", got %d in %s", strings.Count(line, ",")+1, quoteTrunc(line))
		}
		ad, err := parseUUID(adText)
		if err != nil {
			return nil, lr.errorf("bad ad_id %s: %w", quoteTrunc(adText), err)
		}
		camp, err := parseUUID(campText)
		if err != nil {
			return nil, lr.errorf("bad campaign_id %s: %w", quoteTrunc(campText), err)
		}
		if prev, dup := firstLine[ad]; dup {
			return nil, lr.errorf("duplicate ad_id %s (first on line %d)", ad, prev)
		}
		firstLine[ad] = lr.line
		c.AdIDs = append(c.AdIDs, ad)
		c.CampaignIDs = append(c.CampaignIDs, camp)
	}
}

// WriteCSV writes the table in the format ReadCampaigns reads.
func (c *Campaigns) WriteCSV(w io.Writer) error {
	if c == nil {
		return errNoCampaigns
	}
	if len(c.AdIDs) != len(c.CampaignIDs) {
		return fmt.Errorf("ysb: campaigns table has %d ad ids but %d campaign ids", len(c.AdIDs), len(c.CampaignIDs))
	}
	bw := bufio.NewWriter(w)
	line := make([]byte, 0, 2*uuidTextLen+2)
	if _, err := bw.WriteString(CampaignsHeader + "\n"); err != nil {
		return fmt.Errorf("write campaigns: %w", err)
	}
	for i, ad := range c.AdIDs {
		line = ad.appendText(line[:0])
		line = append(line, ',')
		line = c.CampaignIDs[i].appendText(line)
		line = append(line, '\n')
		if _, err := bw.Write(line); err != nil {
			return fmt.Errorf("write campaigns row %d: %w", i, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write campaigns: %w", err)
	}
	return nil
}

// lineReader is the small strict CSV-ish line reader shared by the campaigns
// and results formats: neither has quoting, so encoding/csv's generality (and
// its per-record allocations) buys nothing, and this one reports exact lines.
type lineReader struct {
	sc        *bufio.Scanner
	name      string
	line      int // 1-based number of the line last returned
	emptyLine int // first empty line seen since the last data line, 0 if none
}

// maxLine bounds a line; real lines are < 100 bytes, so anything near this is
// a wrong file, reported rather than buffered.
const maxLine = 1 << 16

func newLineReader(r io.Reader, name string) *lineReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	return &lineReader{sc: sc, name: name}
}

func (lr *lineReader) errorf(format string, args ...any) error {
	return fmt.Errorf("%s line %d: %w", lr.name, lr.line, fmt.Errorf(format, args...))
}

func (lr *lineReader) scanErr() error {
	err := lr.sc.Err()
	if errors.Is(err, bufio.ErrTooLong) {
		return fmt.Errorf("%s line %d: line longer than %d bytes", lr.name, lr.line+1, maxLine)
	}
	return fmt.Errorf("%s line %d: read: %w", lr.name, lr.line+1, err)
}

// header reads line 1 and requires it to equal want.
func (lr *lineReader) header(want string) error {
	if !lr.sc.Scan() {
		if lr.sc.Err() != nil {
			return lr.scanErr()
		}
		return fmt.Errorf("%s: empty file, want header %q", lr.name, want)
	}
	lr.line = 1
	if got := strings.TrimSuffix(lr.sc.Text(), "\r"); got != want {
		return lr.errorf("want header %q, got %s", want, quoteTrunc(got))
	}
	return nil
}

// next returns the next data line without its \r; ok is false at the end.
// Empty lines are skipped only if nothing but empty lines follows them.
func (lr *lineReader) next() (string, bool, error) {
	for lr.sc.Scan() {
		lr.line++
		s := strings.TrimSuffix(lr.sc.Text(), "\r")
		if s == "" {
			if lr.emptyLine == 0 {
				lr.emptyLine = lr.line
			}
			continue
		}
		if lr.emptyLine != 0 {
			return "", false, fmt.Errorf("%s line %d: empty line before more data", lr.name, lr.emptyLine)
		}
		return s, true, nil
	}
	if lr.sc.Err() != nil {
		return "", false, lr.scanErr()
	}
	return "", false, nil
}
