from omectl.cli.main import main

main()
