package pipeline_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/saber-hx/saber-hx/engine"
	"github.com/saber-hx/saber-hx/pipeline"
)

// A SQL program over records held in memory, its rows handed to Go.
func Example() {
	prog, err := pipeline.Compile("trips.sql", `
CREATE SOURCE trips (ts BIGINT, city INT, fare DOUBLE)
  WITH (connector = 'go', format = 'csv', header = 'true');
CREATE VIEW fares AS
  SELECT window_start, city, COUNT(*) AS n, SUM(fare) AS total
  FROM TUMBLE(trips, ts, INTERVAL '10' SECOND)
  GROUP BY window_start, city;`)
	if err != nil {
		log.Fatal(err)
	}
	csv := "ts,city,fare\n" +
		"1000,1,12.5\n" + "2000,2,8\n" + "9000,1,20\n" +
		"12000,1,7.25\n" + "15000,2,30\n"
	if err := prog.AttachReader("trips", strings.NewReader(csv)); err != nil {
		log.Fatal(err)
	}
	err = prog.OnRows("fares", func(rows *pipeline.Rows) error {
		for i := range rows.Len() {
			fmt.Printf("%s", rows.AppendCSV(nil, i))
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	job, err := prog.Open(pipeline.Options{Engine: engine.Config{Workers: 2}})
	if err != nil {
		log.Fatal(err)
	}
	defer job.Close()
	sum, err := job.Run(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d tuples, %d rows\n", sum.Tuples, sum.Queries[0].Rows)
	// Output:
	// 0,1,2,32.5
	// 0,2,1,8
	// 10000,1,1,7.25
	// 10000,2,1,30
	// 5 tuples, 4 rows
}

// A source fed by Go code, a tuple at a time, and a plain SELECT's rows
// read column by column.
func ExampleProgram_AttachSource() {
	prog, err := pipeline.Compile("-e", `
CREATE SOURCE readings (ts BIGINT, sensor INT, celsius REAL) WITH (connector = 'go');
CREATE VIEW hot AS SELECT ts, sensor, celsius FROM readings WHERE celsius > 30;`)
	if err != nil {
		log.Fatal(err)
	}
	err = prog.AttachSource("readings", func(ctx context.Context, w *pipeline.TupleWriter) error {
		for i := range 6 {
			if err := w.Append(int64(i*1000), int32(i%3), float32(25+2*i)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	err = prog.OnRows("hot", func(rows *pipeline.Rows) error {
		for i := range rows.Len() {
			fmt.Printf("sensor %d at %d ms: %s °C\n", rows.Int(i, 1), rows.Int(i, 0), rows.Text(i, 2))
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	job, err := prog.Open(pipeline.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer job.Close()
	if _, err := job.Run(context.Background()); err != nil {
		log.Fatal(err)
	}
	// Output:
	// sensor 0 at 3000 ms: 31 °C
	// sensor 1 at 4000 ms: 33 °C
	// sensor 2 at 5000 ms: 35 °C
}
