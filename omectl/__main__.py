from omectl.cli import main

main()
