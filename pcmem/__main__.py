from pcmem.cli import main

main()
