from plint.entry import main

main()
