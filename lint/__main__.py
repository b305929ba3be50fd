from plint.cli import main

main()
