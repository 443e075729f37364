package ysb

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	idA = "00000000-0000-0000-0000-00000000000a"
	idB = "00000000-0000-0000-0000-00000000000b"
	idC = "00000000-0000-0000-0000-00000000000c"
	idX = "ffffffff-0000-0000-0000-000000000001"
	idY = "ffffffff-0000-0000-0000-000000000002"
)

func mustUUID(t *testing.T, s string) UUID {
	t.Helper()
	u, err := ParseUUID(s)
	require.NoError(t, err)
	return u
}

func TestReadCampaigns(t *testing.T) {
	in := "ad_id,campaign_id\r\n" + idA + "," + idX + "\r\n" + strings.ToUpper(idB) + "," + idX + "\n" + idC + "," + idY + "\n\n"
	c, err := ReadCampaigns(strings.NewReader(in), "c.csv")
	require.NoError(t, err)
	assert.Equal(t, []UUID{mustUUID(t, idA), mustUUID(t, idB), mustUUID(t, idC)}, c.AdIDs)
	assert.Equal(t, []UUID{mustUUID(t, idX), mustUUID(t, idX), mustUUID(t, idY)}, c.CampaignIDs)

	// No trailing newline at all is fine too.
	c, err = ReadCampaigns(strings.NewReader("ad_id,campaign_id\n"+idA+","+idX), "c.csv")
	require.NoError(t, err)
	assert.Len(t, c.AdIDs, 1)

	// Header only: a valid empty table.
	c, err = ReadCampaigns(strings.NewReader("ad_id,campaign_id\n"), "c.csv")
	require.NoError(t, err)
	assert.Empty(t, c.AdIDs)
}

func TestReadCampaignsErrors(t *testing.T) {
	h := "ad_id,campaign_id\n"
	row := idA + "," + idX + "\n"
	for _, tc := range []struct{ name, in, want string }{
		{"empty", "", `campaigns.csv: empty file, want header "ad_id,campaign_id"`},
		{"bad header", "ad,campaign\n" + row, `campaigns.csv line 1: want header "ad_id,campaign_id", got "ad,campaign"`},
		{"missing header", row, `campaigns.csv line 1: want header`},
		{"one field", h + row + idA + "\n", "campaigns.csv line 3: want 2 fields"},
		{"three fields", h + idA + "," + idX + ",x\n", "campaigns.csv line 2: want 2 fields \"ad_id,campaign_id\", got 3"},
		{"bad ad", h + row + idB + "," + idX + "\n" + idC + "," + idX + "\n" + idX + "," + idY + "\n" + idY + "," + idY + "\n" + "xyz," + idX + "\n", `campaigns.csv line 7: bad ad_id "xyz": length 3, want 36`},
		{"bad campaign", h + idA + "," + idX + "-\n", `campaigns.csv line 2: bad campaign_id "` + idX + `-": length 37`},
		{"duplicate", h + row + idB + "," + idX + "\n" + strings.ToUpper(idA) + "," + idY + "\n", "campaigns.csv line 4: duplicate ad_id " + idA + " (first on line 2)"},
		{"gap", h + row + "\n" + idB + "," + idX + "\n", "campaigns.csv line 3: empty line before more data"},
		{"long line", h + strings.Repeat("x", maxLine+10) + "\n", "campaigns.csv line 2: line longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadCampaigns(strings.NewReader(tc.in), "campaigns.csv")
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestCampaignsCSVRoundTripAndLoad(t *testing.T) {
	g, err := NewGenerator(GenConfig{Campaigns: 7, AdsPerCampaign: 3, Seed: 9, TuplesPerMs: 1})
	require.NoError(t, err)
	c := g.Campaigns()
	var buf bytes.Buffer
	require.NoError(t, c.WriteCSV(&buf))
	assert.True(t, strings.HasPrefix(buf.String(), CampaignsHeader+"\n"+c.AdIDs[0].String()+","+c.CampaignIDs[0].String()+"\n"))
	assert.Equal(t, 1+21, strings.Count(buf.String(), "\n"))

	path := filepath.Join(t.TempDir(), "campaigns.csv")
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	back, err := LoadCampaigns(path)
	require.NoError(t, err)
	assert.Equal(t, c, back)

	_, err = LoadCampaigns(filepath.Join(t.TempDir(), "missing.csv"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "missing.csv")
	assert.ErrorIs(t, err, os.ErrNotExist)

	bad := &Campaigns{AdIDs: make([]UUID, 2), CampaignIDs: make([]UUID, 1)}
	assert.ErrorContains(t, bad.WriteCSV(&buf), "2 ad ids but 1 campaign ids")
}
