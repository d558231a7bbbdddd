# report/: bp-report
