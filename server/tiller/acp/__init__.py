"""The ACP front end: `tiller acp`, the Agent Client Protocol (v1) over stdio for Zed,
JetBrains IDEs and the ACP clients of Neovim and Emacs, on one `tiller.host.Host`."""
