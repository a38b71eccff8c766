from h2lab.cli import main

main()
