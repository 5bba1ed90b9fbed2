from fyan.cli import main

raise SystemExit(main())
