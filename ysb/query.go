package ysb

import (
	"github.com/saber-hx/saber-hx/query"
)

// Schema is the YSB tuple as the query model sees it.
func Schema() *query.Schema {
	s, err := query.NewSchema(TupleSize,
		query.Attribute{Name: "event_time", Type: query.Int64, Offset: OffEventTime},
		query.Attribute{Name: "user_id", Type: query.Bytes, Offset: OffUserID, Size: 16},
		query.Attribute{Name: "page_id", Type: query.Bytes, Offset: OffPageID, Size: 16},
		query.Attribute{Name: "ad_id", Type: query.Bytes, Offset: OffAdID, Size: 16},
		query.Attribute{Name: "ad_type", Type: query.Int32, Offset: OffAdType},
		query.Attribute{Name: "event_type", Type: query.Int32, Offset: OffEventType},
		query.Attribute{Name: "ip", Type: query.Int32, Offset: OffIP},
	)
	if err != nil {
		panic(err) // a constant schema: a bug if it does not validate
	}
	return s
}

// Aggregates of Query, in order.
const (
	AggCount = iota
	AggMaxEventTime
)

// Query is YSB as a windowed query of the general model: keep views, join
// ad_id with the campaigns table, and per campaign per tumbling window count
// the views and take their latest event time.
func Query(c *Campaigns, windowMs int64) *query.Query {
	table := &query.StaticTable{KeyWidth: 16, ValueWidth: 16}
	for i := range c.AdIDs {
		table.Keys = append(table.Keys, c.AdIDs[i][:])
		table.Values = append(table.Values, c.CampaignIDs[i][:])
	}
	return &query.Query{
		Name:    "ysb",
		Schema:  Schema(),
		Window:  query.Tumbling(windowMs),
		Where:   query.ColEq("event_type", EventView),
		Join:    &query.StaticJoin{Column: "ad_id", Table: table, As: "campaign_id"},
		GroupBy: []query.Expr{query.C("campaign_id")},
		Aggregates: []query.Aggregate{
			AggCount:        {Func: query.Count, As: "count"},
			AggMaxEventTime: {Func: query.Max, Arg: query.C("event_time"), As: "max_event_time"},
		},
	}
}
