module github.com/go-pdf/fpdf

go 1.20

require golang.org/x/image v0.12.0 // tests only (the Go fonts)
