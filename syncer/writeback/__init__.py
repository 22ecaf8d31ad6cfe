"""Write-back: what detection found, turned into file edits and delivered.

The edits (``plan``), their delivery as a commit, a pull request or a dry run (``deliver``,
``pullrequest``), the live objects git does not declare, reported or proposed as new files
(``untracked``, ``livefile``), and the words and webhooks that tell people (``report``,
``notify``, ``alerts``).
"""
