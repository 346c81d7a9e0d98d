from aitj.cli import main

main()
