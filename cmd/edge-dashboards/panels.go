package main

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// The grid is 24 columns wide; the SDK lays panels left to right, so each line's widths add up
// to 24.
const (
	full    = 24
	half    = 12
	third   = 8
	quarter = 6
)

// edgeDashboard is a dashboard with the variables every edge dashboard has: the Prometheus data
// source, then job and instance (all by default), which scope narrows each query to.
func edgeDashboard(uid, title, description string) *dashboard.DashboardBuilder {
	return dashboard.NewDashboardBuilder(title).
		Uid(uid).
		Description(description).
		Tags([]string{"edge"}).
		Editable().
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Time("now-3h", "now").
		Timezone(common.TimeZoneBrowser).
		Refresh("30s").
		Link(dashboard.NewDashboardLinkBuilder("edge").
			Type(dashboard.DashboardLinkTypeDashboards).
			Icon("external link").
			Tags([]string{"edge"}).
			AsDropdown(true).
			IncludeVars(true).
			KeepTime(true)).
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").
			Label("Data source").
			Type("prometheus")).
		WithVariable(queryVariable("job", "label_values(edge_build_info, job)").IncludeAll(true).Multi(true).AllValue(".*").Current(all())).
		WithVariable(queryVariable("instance", `label_values(edge_build_info{job=~"$job"}, instance)`).IncludeAll(true).Multi(true).AllValue(".*").Current(all()))
}

func queryVariable(name, query string) *dashboard.QueryVariableBuilder {
	return dashboard.NewQueryVariableBuilder(name).
		Label(name).
		Datasource(datasource()).
		Query(dashboard.StringOrMap{String: cog.ToPtr(query)}).
		Definition(query).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortNaturalAsc)
}

func all() dashboard.VariableOption {
	return dashboard.VariableOption{
		Selected: cog.ToPtr(true),
		Text:     dashboard.StringOrArrayOfString{ArrayOfString: []string{"All"}},
		Value:    dashboard.StringOrArrayOfString{ArrayOfString: []string{"$__all"}},
	}
}

func datasource() common.DataSourceRef {
	return common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${datasource}")}
}

func query(expr, legend string) *prometheus.DataqueryBuilder {
	q := prometheus.NewDataqueryBuilder().Datasource(datasource()).Expr(expr)
	if legend != "" {
		q.LegendFormat(legend)
	}
	return q
}

// refID names a panel's queries A, B, ... as Grafana does.
func refID(i int) string { return string(rune('A' + i)) }

func graph(title, unit string, width uint32, queries ...*prometheus.DataqueryBuilder) *timeseries.PanelBuilder {
	p := timeseries.NewPanelBuilder().
		Title(title).
		Datasource(datasource()).
		Span(width).
		Height(8).
		Unit(unit).
		Min(0).
		FillOpacity(10).
		ShowPoints(common.VisibilityModeNever).
		Legend(common.NewVizLegendOptionsBuilder().
			DisplayMode(common.LegendDisplayModeList).
			Placement(common.LegendPlacementBottom).
			ShowLegend(true)).
		Tooltip(common.NewVizTooltipOptionsBuilder().
			Mode(common.TooltipDisplayModeMulti).
			Sort(common.SortOrderDescending))
	for i, q := range queries {
		p.WithTarget(q.RefId(refID(i)))
	}
	return p
}

// bars is a graph of counts per interval (increase), where a line would suggest a level.
func bars(title string, width uint32, queries ...*prometheus.DataqueryBuilder) *timeseries.PanelBuilder {
	return graph(title, "short", width, queries...).
		DrawStyle(common.GraphDrawStyleBars).
		FillOpacity(80).
		Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal))
}

// single is a stat panel of the last value of each series of instant queries.
func single(title, unit string, width uint32, queries ...*prometheus.DataqueryBuilder) *stat.PanelBuilder {
	p := stat.NewPanelBuilder().
		Title(title).
		Datasource(datasource()).
		Span(width).
		Height(5).
		Orientation(common.VizOrientationAuto).
		GraphMode(common.BigValueGraphModeNone).
		ColorMode(common.BigValueColorModeBackground).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}))
	if unit != "" {
		p.Unit(unit)
	}
	for i, q := range queries {
		p.WithTarget(q.Instant().RefId(refID(i)))
	}
	return p
}

// upDown shows a 1/0 gauge as up (green) or down (red).
func upDown(p *stat.PanelBuilder, up, down string) *stat.PanelBuilder {
	return p.
		Mappings([]dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{
			Type: dashboard.MappingTypeValueToText,
			Options: map[string]dashboard.ValueMappingResult{
				"0": {Text: cog.ToPtr(down), Color: cog.ToPtr("red"), Index: cog.ToPtr[int32](0)},
				"1": {Text: cog.ToPtr(up), Color: cog.ToPtr("green"), Index: cog.ToPtr[int32](1)},
			},
		}}}).
		Thresholds(steps("red", 1, "green"))
}

// counted shows counts over the time range: green at 0, red from 1 on when alarm.
func counted(p *stat.PanelBuilder, alarm bool) *stat.PanelBuilder {
	p = p.NoValue("0") // a counter not yet incremented exports no series
	if alarm {
		return p.Thresholds(steps("green", 1, "red"))
	}
	return p.ColorMode(common.BigValueColorModeNone)
}

// steps is base up to the threshold, above from it on.
func steps(base string, threshold float64, above string) *dashboard.ThresholdsConfigBuilder {
	return dashboard.NewThresholdsConfigBuilder().
		Mode(dashboard.ThresholdsModeAbsolute).
		Steps([]dashboard.Threshold{{Color: base}, {Value: cog.ToPtr(threshold), Color: above}})
}

// labelTable lists the label sets of an instant query, one row per series, without the time and
// value columns (the value of an info metric says nothing).
func labelTable(title, expr string) *table.PanelBuilder {
	return table.NewPanelBuilder().
		Title(title).
		Datasource(datasource()).
		Span(full).
		Height(6).
		Footer(common.NewTableFooterOptionsBuilder().Reducer([]string{})).
		WithTarget(query(expr, "").Format(prometheus.PromQueryFormatTable).Instant().RefId("A")).
		WithTransformation(dashboard.DataTransformerConfig{
			Id:      "organize",
			Options: map[string]any{"excludeByName": map[string]bool{"Time": true, "Value": true}},
		})
}
